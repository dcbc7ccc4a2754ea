//! The detectors on texts a hostile server or model would send, and the
//! actions on arguments and results.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::json;

use super::{
    Action, Guardrails, META_KEY, Place,
    detectors::{Detector, find},
    findings_of,
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
    Guardrails::default().check_result(&mut result, Vec::new());
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
    let findings = findings_of(&result);
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
    assert!(
        result
            .meta
            .as_ref()
            .is_some_and(|m| m.get(META_KEY).is_some())
    );
}

#[test]
fn a_blocking_finding_withholds_the_result_and_a_clean_one_is_untouched() {
    let guardrails = Guardrails::with("", "private_key=block").expect("valid");
    let mut result = CallToolResult::success(vec![ContentBlock::text(PEM)]);
    guardrails.check_result(&mut result, Vec::new());
    assert_eq!(result.is_error, Some(true));
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
    guardrails.check_result(&mut checked, Vec::new());
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
