//! Showing a run's events as they arrive: text as it streams, a spinner per
//! tool call that becomes its outcome, skipped integrations, the end.

use std::{io::IsTerminal as _, time::Duration};

use console::style;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use switchboard_proto::{
    json::struct_to_json,
    runs::v1::{self as runs, RunStatus, ToolCallStatus, ToolKind, execute_run_response::Event},
};

use crate::{
    error::CliError,
    output::{Output, short},
    terminal_text::for_terminal,
};

/// How a run ended, when it did not fail.
#[derive(Debug)]
pub enum End {
    /// The model answered.
    Completed {
        /// Integrations the run said the user must connect.
        authorize: Vec<runs::AuthorizationRequired>,
    },
    /// The run waits for the caller.
    Paused {
        /// The paused run.
        run_id: String,
        /// The client tool calls to answer.
        calls: Vec<runs::ToolCallPart>,
        /// The MCP servers' questions to answer.
        asked: Vec<runs::ToolInputRequired>,
        /// The calls that wait for an approval.
        approvals: Vec<runs::ToolApprovalRequired>,
    },
}

/// Renders one run's events.
///
/// One spinner stands for every tool call in flight (a turn's calls run
/// concurrently) and names them; each finished call prints its outcome above
/// it, and the spinner goes once none is left.
#[derive(Debug)]
pub struct Renderer {
    out: Output,
    spinners: bool,
    spinner: Option<ProgressBar>,
    /// The calls in flight: id and label.
    running: Vec<(String, String)>,
    at_line_start: bool,
    pending: Vec<runs::ToolCallPart>,
    asked: Vec<runs::ToolInputRequired>,
    approvals: Vec<runs::ToolApprovalRequired>,
    authorize: Vec<runs::AuthorizationRequired>,
}

impl Renderer {
    /// A renderer printing to `out`; spinners are drawn on stderr when it is
    /// a terminal.
    pub fn new(out: Output) -> Self {
        Self {
            out,
            spinners: !out.is_json() && std::io::stderr().is_terminal(),
            spinner: None,
            running: Vec::new(),
            at_line_start: true,
            pending: Vec::new(),
            asked: Vec::new(),
            approvals: Vec::new(),
            authorize: Vec::new(),
        }
    }

    /// Shows one event; returns how the run ended once it has.
    pub fn event(
        &mut self,
        event: &runs::ExecuteRunResponse,
    ) -> Result<Option<Result<End, CliError>>, CliError> {
        if self.out.is_json() {
            self.out.proto(event)?;
        }
        let Some(kind) = &event.event else {
            return Ok(None);
        };
        if let Some(line) = notice(kind) {
            return self.note(line).map(|()| None);
        }
        match kind {
            Event::TextDelta(delta) if !self.out.is_json() => {
                self.out.text(&delta.text)?;
                if !delta.text.is_empty() {
                    self.at_line_start = delta.text.ends_with('\n');
                }
            }
            Event::ToolCallStarted(call) => self.tool_started(call)?,
            Event::ToolCallFinished(call) => self.tool_finished(call)?,
            Event::ClientToolCallsRequired(required) => {
                self.pending.clone_from(&required.tool_calls);
            }
            Event::ToolInputRequired(asked) => self.asked.push(asked.clone()),
            Event::ToolApprovalRequired(asked) => self.approvals.push(asked.clone()),
            Event::AuthorizationRequired(needed) => {
                self.note(format!(
                    "{} integration {} needs you to connect your account",
                    style("🔑").yellow(),
                    needed.integration_id
                ))?;
                self.authorize.push(needed.clone());
            }
            Event::RunCompleted(completed) => {
                self.end_line()?;
                let run = completed.run.clone().unwrap_or_default();
                return Ok(Some(self.completed(&event.run_id, &run)));
            }
            Event::RunFailed(failed) => {
                self.end_line()?;
                return Ok(Some(Err(CliError::Failed(format!(
                    "run {} failed: {}",
                    event.run_id,
                    crate::error::one_line(&failed.error)
                )))));
            }
            _ => {}
        }
        Ok(None)
    }

    /// Clears the spinners after Ctrl-C.
    pub fn interrupted(&mut self) -> Result<(), CliError> {
        self.running.clear();
        if let Some(spinner) = self.spinner.take() {
            spinner.finish_and_clear();
        }
        self.end_line()?;
        if !self.out.is_json() {
            self.out
                .line(format!("{} run cancelled", style("■").yellow()))?;
        }
        Ok(())
    }

    fn completed(&mut self, run_id: &str, run: &runs::Run) -> Result<End, CliError> {
        match RunStatus::try_from(run.status) {
            Ok(RunStatus::RequiresAction) => Ok(End::Paused {
                run_id: run_id.to_owned(),
                calls: std::mem::take(&mut self.pending),
                asked: std::mem::take(&mut self.asked),
                approvals: std::mem::take(&mut self.approvals),
            }),
            Ok(RunStatus::MaxSteps) => Err(CliError::Failed(format!(
                "run {run_id} stopped at its step limit ({} model calls)",
                run.steps
            ))),
            _ => Ok(End::Completed {
                authorize: std::mem::take(&mut self.authorize),
            }),
        }
    }

    fn tool_started(&mut self, call: &runs::ToolCallStarted) -> Result<(), CliError> {
        if self.out.is_json() {
            return Ok(());
        }
        self.end_line()?;
        let arguments = arguments_text(&call.arguments_json, call.arguments.as_ref());
        let label = format!(
            "{} {} {}",
            kind_label(call.kind),
            call.tool_name,
            short(&arguments, 80)
        );
        self.running.push((call.tool_call_id.clone(), label));
        if self.spinners {
            let labels = self.running_labels();
            let spinner = self.spinner.get_or_insert_with(|| {
                let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                    .with_style(
                        ProgressStyle::with_template("{spinner:.cyan} {msg}")
                            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    );
                spinner.enable_steady_tick(Duration::from_millis(100));
                spinner
            });
            spinner.set_message(for_terminal(&labels).into_owned());
        }
        Ok(())
    }

    fn running_labels(&self) -> String {
        let labels: Vec<&str> = self.running.iter().map(|(_, l)| l.as_str()).collect();
        labels.join(" · ")
    }

    fn tool_finished(&mut self, call: &runs::ToolCallFinished) -> Result<(), CliError> {
        if self.out.is_json() {
            return Ok(());
        }
        self.running.retain(|(id, _)| *id != call.tool_call_id);
        if self.running.is_empty() {
            if let Some(spinner) = self.spinner.take() {
                spinner.finish_and_clear();
            }
        } else if let Some(spinner) = &self.spinner {
            spinner.set_message(for_terminal(&self.running_labels()).into_owned());
        }
        let result = short(&call.result, 100);
        let line = match ToolCallStatus::try_from(call.status) {
            Ok(ToolCallStatus::Succeeded) => {
                format!(
                    "{} {} → {result}",
                    style("✓").green().bold(),
                    call.tool_name
                )
            }
            Ok(ToolCallStatus::TimedOut) => {
                format!(
                    "{} {} timed out: {result}",
                    style("✗").red().bold(),
                    call.tool_name
                )
            }
            Ok(ToolCallStatus::InputRequired) => format!(
                "{} {} waits for your answer",
                style("⏸").yellow().bold(),
                call.tool_name
            ),
            Ok(ToolCallStatus::ApprovalRequired) => format!(
                "{} {} waits for an approval",
                style("⏸").yellow().bold(),
                call.tool_name
            ),
            Ok(ToolCallStatus::MayHaveRun) => format!(
                "{} {} may have run; it is not made again",
                style("?").yellow().bold(),
                call.tool_name
            ),
            Ok(ToolCallStatus::NotFound) => format!(
                "{} {} does not exist: {result}",
                style("✗").red().bold(),
                call.tool_name
            ),
            _ => format!(
                "{} {} failed: {result}",
                style("✗").red().bold(),
                call.tool_name
            ),
        };
        self.note(line)
    }

    /// A line of its own, printed above the spinner.
    fn note(&mut self, line: String) -> Result<(), CliError> {
        if self.out.is_json() {
            return Ok(());
        }
        self.end_line()?;
        let out = self.out;
        match &self.spinner {
            Some(spinner) => spinner.suspend(|| out.line(line)),
            None => out.line(line),
        }
    }

    fn end_line(&mut self) -> Result<(), CliError> {
        if !self.at_line_start && !self.out.is_json() {
            self.out.line("")?;
        }
        self.at_line_start = true;
        Ok(())
    }
}

/// A call's arguments as the model wrote them, else as the service parsed
/// them.
pub fn arguments_text(exact: &str, parsed: Option<&prost_types::Struct>) -> String {
    if exact.is_empty() {
        parsed.map(struct_to_json).unwrap_or_default().to_string()
    } else {
        exact.to_owned()
    }
}

fn kind_label(kind: i32) -> &'static str {
    match ToolKind::try_from(kind) {
        Ok(ToolKind::Mcp) => "calling MCP tool",
        Ok(ToolKind::Client) => "client tool",
        Ok(ToolKind::Builtin) => "running",
        _ => "calling",
    }
}

/// The note for a tool its server changed since the thread pinned it.
/// The line of an event that only tells something; `None` for the others.
fn notice(kind: &Event) -> Option<String> {
    Some(match kind {
        Event::IntegrationDiscoveryFailed(failed) => format!(
            "{} integration {} is skipped: {}",
            style("!").yellow().bold(),
            failed.integration_id,
            crate::error::one_line(&failed.error)
        ),
        Event::SoftBudgetExceeded(passed) => format!(
            "{} your organization used {} tokens this month, past its soft budget of {}",
            style("!").yellow().bold(),
            passed.used_tokens,
            passed.soft_budget_tokens
        ),
        Event::ToolDefinitionChanged(change) => tool_changed(change),
        Event::ModelFallback(moved) => format!(
            "{} model {} failed ({}); going on with {}",
            style("!").yellow().bold(),
            model_name(moved.failed.as_ref()),
            crate::error::one_line(&moved.error),
            model_name(moved.next.as_ref())
        ),
        Event::RunContinued(continued) => format!(
            "{} the run's replica stopped; another continues it ({} tool calls may have run)",
            style("↻").yellow().bold(),
            continued.unresolved_tool_call_ids.len()
        ),
        _ => return None,
    })
}

/// `provider/model`.
fn model_name(model: Option<&runs::ModelRef>) -> String {
    model.map_or_else(String::new, |m| format!("{}/{}", m.provider, m.model))
}

fn tool_changed(change: &runs::ToolDefinitionChanged) -> String {
    let parts = match (change.description_changed, change.input_schema_changed) {
        (true, true) => "its description and input schema",
        (true, false) => "its description",
        (false, true) => "its input schema",
        (false, false) => "its definition",
    };
    let outcome = if change.applied == i32::from(runs::ToolDriftPolicy::Accept) {
        "the new definition is pinned and offered".to_owned()
    } else if change.applied == i32::from(runs::ToolDriftPolicy::Ask) {
        format!(
            "it is withheld from the model; to accept it, run `switchboard threads accept-tool {} {} {}`",
            change.thread_id, change.tool_name, change.new_digest
        )
    } else {
        "it is withheld from the model".to_owned()
    };
    format!(
        "{} the server of tool {} changed {parts} since this thread pinned it: {outcome}",
        style("!").yellow().bold(),
        change.tool_name
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(applied: runs::ToolDriftPolicy) -> runs::ToolDefinitionChanged {
        runs::ToolDefinitionChanged {
            tool_name: "example__echo".into(),
            description_changed: true,
            applied: applied.into(),
            new_digest: "ab".repeat(32),
            thread_id: "0190d5a4-0000-7000-8000-000000000001".into(),
            ..Default::default()
        }
    }

    #[test]
    fn an_asked_change_says_how_to_accept_it() {
        let note = tool_changed(&change(runs::ToolDriftPolicy::Ask));
        assert!(
            note.ends_with(&format!(
                "it is withheld from the model; to accept it, run `switchboard threads accept-tool 0190d5a4-0000-7000-8000-000000000001 example__echo {}`",
                "ab".repeat(32)
            )),
            "{note}"
        );
        let refused = tool_changed(&change(runs::ToolDriftPolicy::Refuse));
        assert!(
            refused.ends_with("it is withheld from the model"),
            "{refused}"
        );
    }
}
