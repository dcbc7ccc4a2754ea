//! Keeping the terminal from echoing `^C` while a run streams.
//!
//! Ctrl-C cancels the run; the terminal would also print `^C` after the
//! tool-call spinner, which is padded to the terminal's width, so the echo
//! wraps onto a new line and the spinner's line could no longer be cleared.

use std::io::IsTerminal as _;

use rustix::termios::{LocalModes, OptionalActions, Termios, tcgetattr, tcsetattr};

/// While alive, the terminal on stdin does not echo control characters; the
/// previous settings come back on drop.
#[derive(Debug)]
pub struct NoControlEcho {
    saved: Option<Termios>,
}

impl NoControlEcho {
    /// Turns the echo of control characters off, when stdin is a terminal.
    pub fn new() -> Self {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Self { saved: None };
        }
        let Ok(saved) = tcgetattr(&stdin) else {
            return Self { saved: None };
        };
        let mut quiet = saved.clone();
        quiet.local_modes.remove(LocalModes::ECHOCTL);
        // A terminal that refuses the change just echoes `^C` as before.
        let _ = tcsetattr(&stdin, OptionalActions::Now, &quiet);
        Self { saved: Some(saved) }
    }
}

impl Drop for NoControlEcho {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            // Nothing more can be done about a terminal that refuses its
            // own earlier settings.
            let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, saved);
        }
    }
}
