//! What a paused or finished run asks of the person at the terminal: the
//! answers to an MCP server's questions (`tool_input_required`), and
//! connecting an integration that needs their authorization
//! (`authorization_required`).

use serde_json::{Map, Value, json};
use switchboard_proto::{
    mcp::v1::CompleteAuthorizationRequest,
    runs::v1::{self as runs, ToolInputAnswers},
};

use super::LineReader;
use crate::{
    client::Clients,
    error::{CliError, Service},
    output::Output,
};

/// How many times a question is asked again after an answer it cannot take.
const TRIES: usize = 3;

/// Asks the person each question of each call; one set of answers per call.
pub async fn answers(
    asked: &[runs::ToolInputRequired],
    out: Output,
    lines: &mut LineReader,
) -> Result<Vec<ToolInputAnswers>, CliError> {
    let mut answers = Vec::with_capacity(asked.len());
    for call in asked {
        let mut responses = std::collections::HashMap::new();
        for request in &call.requests {
            let params: Value = serde_json::from_str(&request.params_json).unwrap_or(Value::Null);
            let answer = match request.method.as_str() {
                "elicitation/create" => elicit(&call.tool_name, &params, out, lines).await?,
                method => raw_result(&call.tool_name, method, &params, out, lines).await?,
            };
            responses.insert(request.key.clone(), answer.to_string());
        }
        answers.push(ToolInputAnswers {
            tool_call_id: call.tool_call_id.clone(),
            responses,
        });
    }
    Ok(answers)
}

/// Shows `line` where the person reads it: stdout, or stderr under `--json`.
pub(super) fn say(out: Output, line: String) -> Result<(), CliError> {
    if out.is_json() {
        crate::output::to_stderr(line);
        Ok(())
    } else {
        out.line(line)
    }
}

async fn read(lines: &mut LineReader, prompt: &str, what: &str) -> Result<String, CliError> {
    lines
        .read(prompt)
        .await?
        .ok_or_else(|| CliError::Failed(format!("the run waits for {what}; none was given")))
}

/// An elicitation: its message, then each field of its form (or, for a URL
/// elicitation, the address to visit). `!decline` or `!cancel` at any
/// prompt answers so.
async fn elicit(
    tool: &str,
    params: &Value,
    out: Output,
    lines: &mut LineReader,
) -> Result<Value, CliError> {
    let message = params["message"]
        .as_str()
        .unwrap_or("the server asks for input");
    say(
        out,
        format!("⏸ `{tool}` asks: {message}\n  (type !decline or !cancel to refuse)"),
    )?;
    if let Some(url) = params["url"].as_str() {
        say(out, format!("  open {url}, then press Enter"))?;
        let line = read(lines, "done> ", "an answer").await?;
        return Ok(refusal(&line).unwrap_or_else(|| json!({"action": "accept"})));
    }
    let schema = &params["requestedSchema"];
    let empty = Map::new();
    let fields = schema["properties"].as_object().unwrap_or(&empty);
    let mut content = Map::new();
    for (name, field) in fields {
        match ask_field(name, field, lines).await? {
            Field::Value(value) => {
                content.insert(name.clone(), value);
            }
            Field::Skipped => {}
            Field::Refused(answer) => return Ok(answer),
        }
    }
    Ok(json!({"action": "accept", "content": content}))
}

/// One field's answer.
enum Field {
    Value(Value),
    Skipped,
    Refused(Value),
}

fn refusal(line: &str) -> Option<Value> {
    match line.trim() {
        "!decline" => Some(json!({"action": "decline"})),
        "!cancel" => Some(json!({"action": "cancel"})),
        _ => None,
    }
}

/// Asks one form field until the answer fits its type; an empty line takes
/// the field's default (or leaves it out).
async fn ask_field(name: &str, field: &Value, lines: &mut LineReader) -> Result<Field, CliError> {
    let kind = field["type"].as_str().unwrap_or("string");
    let default = field.get("default");
    let hint = match (kind, default) {
        ("boolean", Some(d)) => format!("{name} (y/n, default {d})> "),
        ("boolean", None) => format!("{name} (y/n)> "),
        (_, Some(d)) => format!("{name} (default {d})> "),
        _ => format!("{name}> "),
    };
    for _ in 0..TRIES {
        let line = read(lines, &hint, "an answer").await?;
        if let Some(refused) = refusal(&line) {
            return Ok(Field::Refused(refused));
        }
        let text = line.trim();
        if text.is_empty() {
            return Ok(default.cloned().map_or(Field::Skipped, Field::Value));
        }
        if let Some(value) = typed(kind, text) {
            return Ok(Field::Value(value));
        }
    }
    Err(CliError::Failed(format!(
        "`{name}` needs a {kind}; none was given"
    )))
}

fn typed(kind: &str, text: &str) -> Option<Value> {
    match kind {
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Some(Value::Bool(true)),
            "n" | "no" | "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "integer" => text.parse::<i64>().ok().map(Value::from),
        "number" => text.parse::<f64>().ok().map(Value::from),
        _ => Some(Value::String(text.to_owned())),
    }
}

/// A request the terminal has no form for (a sampling, the roots): its
/// result typed as JSON.
async fn raw_result(
    tool: &str,
    method: &str,
    params: &Value,
    out: Output,
    lines: &mut LineReader,
) -> Result<Value, CliError> {
    say(
        out,
        format!("⏸ `{tool}` sends {method} with {params}\n  type its JSON result:"),
    )?;
    for _ in 0..TRIES {
        let line = read(lines, "result> ", "a result").await?;
        if let Ok(value @ Value::Object(_)) = serde_json::from_str(line.trim()) {
            return Ok(value);
        }
        say(out, "  that is not a JSON object; try again:".to_owned())?;
    }
    Err(CliError::Failed(format!(
        "{method} needs a JSON result; none was given"
    )))
}

/// Asks the person to connect each integration the run said needs it: the
/// URL to open, then the address the browser was sent back to, whose `code`
/// and `state` complete the authorization. Returns whether any was
/// connected (an empty line skips one).
pub async fn authorize(
    clients: &Clients,
    needed: &[runs::AuthorizationRequired],
    out: Output,
    lines: &mut LineReader,
) -> Result<bool, CliError> {
    let mut connected = false;
    let mut seen = std::collections::HashSet::new();
    for needs in needed
        .iter()
        .filter(|n| seen.insert(n.integration_id.clone()))
    {
        say(
            out,
            format!(
                "🔑 integration {} needs you to connect your account. Open\n  {}\n  then paste the address your browser is sent back to (Enter to skip):",
                needs.integration_id, needs.authorization_url
            ),
        )?;
        let Some(line) = lines.read("redirect> ").await? else {
            break;
        };
        if line.trim().is_empty() {
            continue;
        }
        let request = redirect(line.trim())?;
        let mut mcp = clients.mcp()?;
        mcp.complete_authorization(clients.unary(request))
            .await
            .map_err(CliError::from(Service::Mcp))?;
        say(
            out,
            format!("✓ integration {} connected", needs.integration_id),
        )?;
        connected = true;
    }
    Ok(connected)
}

/// The `code`, `state` and `iss` of the address the authorization server
/// sent the browser back to.
fn redirect(address: &str) -> Result<CompleteAuthorizationRequest, CliError> {
    let url = url::Url::parse(address)
        .map_err(|e| CliError::Usage(format!("not an address ({e}): paste the whole URL")))?;
    let mut request = CompleteAuthorizationRequest::default();
    for (key, value) in url.query_pairs() {
        match key.as_ref() {
            "code" => request.code = value.into_owned(),
            "state" => request.state = value.into_owned(),
            "iss" => request.iss = value.into_owned(),
            "error" => {
                return Err(CliError::Failed(format!(
                    "the authorization server refused: {value}"
                )));
            }
            _ => {}
        }
    }
    if request.code.is_empty() || request.state.is_empty() {
        return Err(CliError::Usage(
            "the address has no `code` and `state`: paste the one your browser was sent back to"
                .into(),
        ));
    }
    Ok(request)
}
