//! A server's progress reports on one call, for the client that made it.
//!
//! An MCP client asks for progress by giving its request a `progressToken`.
//! That token is the client's own string: it is never sent upstream nor
//! used as a key anywhere shared, since two clients may choose the same
//! one for calls on one upstream session. The endpoint keeps the client's
//! token with the call, gives the call a [`ProgressSink`], and the upstream
//! session registers the sink under the token of its own request for as
//! long as that request runs: a server's report on it comes into the sink,
//! and the endpoint tells the client with the client's token.
//!
//! A call's sink holds at most its capacity of reports the client has not
//! been told yet; one past it is dropped (progress the client did not keep
//! up with), never queued without bound.

use tokio::sync::mpsc;

/// One progress report (the wire `notifications/progress` without its
/// token).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far the operation is; grows with each report.
    pub progress: f64,
    /// How far it goes in all, when the server knows.
    pub total: Option<f64>,
    /// What the server is doing, in its words.
    pub message: Option<String>,
}

/// Where the progress of one call goes: the calling client's reports.
#[derive(Debug, Clone)]
pub struct ProgressSink {
    sender: mpsc::Sender<Progress>,
}

impl ProgressSink {
    /// A sink holding at most `capacity` reports not yet told (at least
    /// one), and where they come out.
    pub fn new(capacity: usize) -> (Self, mpsc::Receiver<Progress>) {
        let (sender, receiver) = mpsc::channel(capacity.max(1));
        (Self { sender }, receiver)
    }

    /// Passes `progress` on; false when it was dropped (the sink full, or
    /// its call over).
    pub fn tell(&self, progress: Progress) -> bool {
        match self.sender.try_send(progress) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::debug!("a call's client is behind: progress dropped");
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn step(progress: f64) -> Progress {
        Progress {
            progress,
            total: Some(3.0),
            message: None,
        }
    }

    #[test]
    fn reports_past_the_capacity_are_dropped_and_none_after_the_call() {
        let (sink, mut told) = ProgressSink::new(2);
        assert!(sink.tell(step(1.0)));
        assert!(sink.tell(step(2.0)));
        assert!(!sink.tell(step(3.0)), "past the capacity");
        assert_eq!(told.try_recv().ok(), Some(step(1.0)));
        assert_eq!(told.try_recv().ok(), Some(step(2.0)));
        assert!(told.try_recv().is_err(), "the dropped report never came");
        drop(told);
        assert!(!sink.tell(step(4.0)), "the call is over");
    }
}
