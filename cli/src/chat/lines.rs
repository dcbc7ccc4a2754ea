//! Reading the user's lines with a line editor (history, editing keys), off
//! the async runtime's threads.

use rustyline::{DefaultEditor, error::ReadlineError};

use crate::error::CliError;

/// The line editor. Without a terminal it reads plain lines from stdin.
#[derive(Debug)]
pub struct LineReader {
    editor: Option<DefaultEditor>,
}

impl LineReader {
    /// A line editor on the terminal.
    pub fn new() -> Result<Self, CliError> {
        let editor = DefaultEditor::new()
            .map_err(|error| CliError::Failed(format!("cannot open the line editor: {error}")))?;
        Ok(Self {
            editor: Some(editor),
        })
    }

    /// The next line, or `None` at the end of input (Ctrl-D) or on Ctrl-C.
    pub async fn read(&mut self, prompt: &str) -> Result<Option<String>, CliError> {
        let mut editor = self.editor.take().ok_or_else(|| {
            CliError::Failed("the line editor was lost by an earlier failure".into())
        })?;
        let prompt = crate::terminal_text::for_terminal(prompt).into_owned();
        // The editor blocks on the terminal; it runs on a blocking thread
        // and comes back with the line.
        let (mut editor, line) = tokio::task::spawn_blocking(move || {
            let line = editor.readline(&prompt);
            (editor, line)
        })
        .await
        .map_err(|error| CliError::Failed(format!("the line editor stopped: {error}")))?;
        let line = match line {
            Ok(line) => {
                // History is a convenience; a refused entry changes nothing.
                let _ = editor.add_history_entry(line.as_str());
                Some(line)
            }
            Err(ReadlineError::Eof | ReadlineError::Interrupted) => None,
            Err(ReadlineError::Io(error)) => return Err(CliError::Io(error)),
            Err(error) => {
                return Err(CliError::Failed(format!("cannot read a line: {error}")));
            }
        };
        self.editor = Some(editor);
        Ok(line)
    }
}
