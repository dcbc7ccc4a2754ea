//! The detectors on texts a hostile server or model would send, and the
//! actions on arguments and results.

use rmcp::model::{
    CallToolResult, ContentBlock, GetPromptResult, JsonObject, PromptMessage, ReadResourceResult,
    ResourceContents, Role,
};
use serde_json::json;

use super::{
    Action, GuardrailSettings, Guardrails, Place, SettingInput,
    detectors::{Detector, find},
};

const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
const PEM: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naFDrBz9vFqU4yEr9QYwPJQf9C1Q5Jk7qvOaZf3uAaBz5D3r5ZxZyF0YQnGz5x5Q=\n-----END RSA PRIVATE KEY-----";
const CARD: &str = "4111 1111 1111 1111";

fn detected(text: &str) -> Vec<Detector> {
    find(text).into_iter().map(|f| f.detector).collect()
}

#[test]
fn each_detector_finds_its_format_and_not_its_look_alikes() {
    assert_eq!(detected(&format!("key={AWS} ok")), [Detector::AwsAccessKey]);
    assert_eq!(detected(PEM), [Detector::PrivateKey]);
    assert_eq!(detected(&format!("card {CARD}.")), [Detector::CardNumber]);
    assert_eq!(
        detected("card 4111 1111 1111 1112."),
        [],
        "fails the checksum"
    );
    assert_eq!(
        detected("ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        [Detector::GithubToken]
    );
    assert_eq!(
        detected("sk-proj-abcdefghijklmnopqrstuvwxyz012345"),
        [Detector::ApiKey]
    );
    assert_eq!(
        detected("sk_live_abcdefghijklmnopqrstuvwx"),
        [Detector::StripeKey]
    );
    assert_eq!(detected("mail ann@example.com now"), [Detector::Email]);
    assert_eq!(
        detected("token Zx8vQ2mN7pL4kR9sT1wY6bH3jF5dG0cA8eU2iO4q"),
        [Detector::HighEntropy]
    );
    // Hashes and ids of hexadecimal digits are not secrets.
    assert_eq!(
        detected("sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        []
    );
    assert_eq!(detected("id 0192f5c4-7a3b-7c1d-9e2f-3a4b5c6d7e8f"), []);
    // An unterminated key block is a key to its end.
    let cut = &PEM[..80];
    assert_eq!(detected(cut), [Detector::PrivateKey]);
}

#[test]
fn a_result_is_redacted_in_place_and_says_what_was_found() {
    let mut result = CallToolResult::success(vec![ContentBlock::text(format!(
        "aws {AWS}\n{PEM}\ncard {CARD}, mail ann@example.com"
    ))]);
    result.structured_content = Some(json!({ "nested": [ { "key": AWS } ] }));
    let findings = Guardrails::default().check_result(&mut result);
    let ContentBlock::Text(text) = &result.content[0] else {
        panic!("text");
    };
    assert_eq!(
        text.text,
        "aws [redacted aws_access_key]\n[redacted private_key]\ncard [redacted card_number], mail ann@example.com"
    );
    assert_eq!(
        result.structured_content,
        Some(json!({ "nested": [ { "key": "[redacted aws_access_key]" } ] }))
    );
    let summary: Vec<(&str, Action, u32)> = findings
        .iter()
        .map(|f| (f.detector.as_str(), f.action, f.count))
        .collect();
    assert_eq!(
        summary,
        [
            ("aws_access_key", Action::Redact, 2),
            ("private_key", Action::Redact, 1),
            ("email", Action::Flag, 1),
            ("card_number", Action::Redact, 1),
        ]
    );
    assert!(findings.iter().all(|f| f.place == Place::Result));
    assert_eq!(result.meta, None, "findings travel beside the result");
}

#[test]
fn a_blocking_finding_withholds_the_result_and_a_clean_one_is_untouched() {
    let guardrails = Guardrails::with("", "private_key=block").expect("valid");
    let mut result = CallToolResult::success(vec![ContentBlock::text(PEM)]);
    let findings = guardrails.check_result(&mut result);
    assert_eq!(result.is_error, Some(true));
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0].action, Action::Block);
    let ContentBlock::Text(text) = &result.content[0] else {
        panic!("text");
    };
    assert!(
        text.text.contains("withheld: it carried a private key"),
        "{}",
        text.text
    );
    assert!(!text.text.contains("MIIE"));

    let clean = CallToolResult::success(vec![ContentBlock::text("all fine")]);
    let mut checked = clean.clone();
    assert!(guardrails.check_result(&mut checked).is_empty());
    assert_eq!(checked, clean);
}

#[test]
fn arguments_carrying_a_secret_are_blocked_and_others_flagged() {
    let mut arguments: JsonObject =
        serde_json::from_value(json!({ "body": format!("here: {AWS}") })).expect("object");
    assert_eq!(
        Guardrails::default().check_arguments(&mut arguments),
        Err(Detector::AwsAccessKey)
    );
    let mut arguments: JsonObject =
        serde_json::from_value(json!({ "to": "ann@example.com" })).expect("object");
    let findings = Guardrails::default()
        .check_arguments(&mut arguments)
        .expect("flagged only");
    assert_eq!(findings[0].detector, "email");
    assert_eq!(findings[0].place, Place::Arguments);
    assert_eq!(arguments["to"], "ann@example.com");
}

#[test]
fn settings_name_their_detector_and_action_or_are_refused() {
    let off = Guardrails::with("aws_access_key=off", "").expect("valid");
    let mut arguments: JsonObject = serde_json::from_value(json!({ "k": AWS })).expect("object");
    assert_eq!(off.check_arguments(&mut arguments), Ok(Vec::new()));
    assert!(Guardrails::with("nope=block", "").is_err());
    assert!(Guardrails::with("email=shout", "").is_err());
    assert!(Guardrails::with("email", "").is_err());
}

#[test]
fn a_hostile_text_costs_time_in_proportion_to_its_length() {
    // 1 MiB of near-misses for every pattern at once: it is scanned, not
    // stuck (the patterns cannot backtrack).
    let unit = "-----BEGIN PRIVATE KEY----- AKIA ghp_ sk- eyJ a@b 4111 ";
    let text = unit.repeat((1 << 20) / unit.len());
    let found = find(&text);
    assert!(found.len() < text.len());
    // Half a million digits with a space between each: one run, read once.
    let digits = "1 ".repeat(500_000);
    assert!(find(&digits).is_empty());
    // 100,000 e-mail addresses: each found, none lost.
    let many = "a@example.com ".repeat(100_000);
    assert_eq!(find(&many).len(), 100_000);
}

#[test]
fn card_numbers_and_entropy_tokens_are_found_at_their_bounds_and_not_past_them() {
    // 13 and 19 digits that pass the checksum are cards; 20 that pass it
    // are not.
    assert_eq!(detected("4222222222222"), [Detector::CardNumber]);
    assert_eq!(detected("6011000000000000001"), [Detector::CardNumber]);
    assert_eq!(detected("60110000000000000004"), []);
    // A high-entropy token of 512 bytes is weighed; one of 513 is not.
    let alphabet: Vec<char> = ('a'..='z').chain('A'..='Z').chain('0'..='9').collect();
    let token = |len: usize| -> String {
        (0..len)
            .map(|i| alphabet[(i * 7) % alphabet.len()])
            .collect()
    };
    assert_eq!(detected(&token(512)), [Detector::HighEntropy]);
    assert_eq!(detected(&token(513)), []);
    assert_eq!(detected(&token(31)), []);
}

fn settings(entries: &[(&str, &str, &str)]) -> GuardrailSettings {
    let written: Vec<SettingInput> = entries
        .iter()
        .map(|(detector, place, action)| SettingInput {
            detector: (*detector).to_owned(),
            place: (*place).to_owned(),
            action: (*action).to_owned(),
        })
        .collect();
    GuardrailSettings::parse("guardrails", &written).expect("valid")
}

#[test]
fn the_integration_says_last_over_the_organization_over_the_deployment() {
    let deployment = Guardrails::default();
    let organization = settings(&[
        ("card_number", "result", "block"),
        ("email", "result", "redact"),
    ]);
    let integration = settings(&[("card_number", "result", "off")]);
    let resolved = deployment.resolved(&organization, &integration);
    let mut result = CallToolResult::success(vec![ContentBlock::text(format!(
        "card {CARD}, mail ann@example.com"
    ))]);
    let findings = resolved.check_result(&mut result);
    let ContentBlock::Text(text) = &result.content[0] else {
        panic!("text");
    };
    assert_eq!(text.text, format!("card {CARD}, mail [redacted email]"));
    assert_eq!(findings.len(), 1);
    // Nothing set: the deployment's own, borrowed.
    let none = GuardrailSettings::none();
    assert!(matches!(
        deployment.resolved(&none, &none),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn two_policies_setting_one_detector_give_the_strongest_action() {
    let flag = settings(&[("email", "arguments", "flag")]);
    let block = settings(&[("email", "arguments", "block")]);
    let merged = GuardrailSettings::strongest([&flag, &block]);
    assert_eq!(merged.settings().len(), 1);
    assert_eq!(merged.settings()[0].action, Action::Block);
}

#[test]
fn settings_name_the_field_at_fault() {
    let parse = |detector: &str, place: &str, action: &str| {
        let written = [
            SettingInput {
                detector: "email".into(),
                place: "result".into(),
                action: "flag".into(),
            },
            SettingInput {
                detector: detector.into(),
                place: place.into(),
                action: action.into(),
            },
        ];
        GuardrailSettings::parse("integration.guardrails", &written)
            .expect_err("refused")
            .field
    };
    assert_eq!(
        parse("passport", "result", "flag"),
        "integration.guardrails[1].detector"
    );
    assert_eq!(
        parse("email", "header", "flag"),
        "integration.guardrails[1].place"
    );
    assert_eq!(
        parse("email", "arguments", "hide"),
        "integration.guardrails[1].action"
    );
    assert_eq!(
        parse("email", "result", "block"),
        "integration.guardrails[1].detector"
    );
    let too_many: Vec<SettingInput> = (0..23)
        .map(|_| SettingInput {
            detector: "email".into(),
            place: "result".into(),
            action: "flag".into(),
        })
        .collect();
    assert!(GuardrailSettings::parse("g", &too_many).is_err());
}

#[test]
fn resources_and_prompts_are_redacted_as_results_are() {
    let guardrails = Guardrails::default();
    let mut read = ReadResourceResult::new(vec![ResourceContents::text(
        format!("id,key\n1,{AWS}\n"),
        "file:///keys.csv",
    )]);
    let findings = guardrails.check_resource(&mut read).expect("not blocked");
    let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("text");
    };
    assert_eq!(text, "id,key\n1,[redacted aws_access_key]\n");
    assert_eq!(findings[0].detector, "aws_access_key");

    // A CSV sent as a blob is text too; a binary blob is left alone.
    use base64::{Engine as _, engine::general_purpose::STANDARD};
    let image = STANDARD.encode([0xff_u8, 0xd8, 0xff, 0xe0]);
    let mut read = ReadResourceResult::new(vec![
        ResourceContents::blob(STANDARD.encode(format!("key\n{AWS}\n")), "file:///k.csv"),
        ResourceContents::blob(image.clone(), "file:///k.jpg"),
    ]);
    let findings = guardrails.check_resource(&mut read).expect("not blocked");
    let ResourceContents::BlobResourceContents { blob, .. } = &read.contents[0] else {
        panic!("blob");
    };
    assert_eq!(
        STANDARD.decode(blob).expect("base64"),
        b"key\n[redacted aws_access_key]\n"
    );
    assert_eq!(findings.len(), 1);
    let ResourceContents::BlobResourceContents { blob, .. } = &read.contents[1] else {
        panic!("blob");
    };
    assert_eq!(blob, &image);

    let mut prompt = GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        format!("deploy with {PEM}"),
    )]);
    let findings = guardrails.check_prompt(&mut prompt).expect("not blocked");
    let ContentBlock::Text(text) = &prompt.messages[0].content else {
        panic!("text");
    };
    assert_eq!(text.text, "deploy with [redacted private_key]");
    assert_eq!(findings[0].detector, "private_key");

    let blocking = Guardrails::with("", "private_key=block").expect("valid");
    let mut prompt = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, PEM)]);
    assert_eq!(
        blocking.check_prompt(&mut prompt),
        Err(Detector::PrivateKey)
    );
}
