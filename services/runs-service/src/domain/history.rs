//! How much of a thread a model request carries, and the meter that admits
//! messages from the newest back. Here, below the run and the ports,
//! because the run keeps its window with it and storage stops reading there.

/// How much of a thread a model request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Most messages.
    pub max_messages: u32,
    /// Most bytes, counted by [`Message::size`](super::entities::Message::size).
    pub max_bytes: usize,
}

/// Admits messages from the newest back while they fit in the limits; the
/// newest always does, so a request never goes without its input.
#[derive(Debug, Clone, Copy)]
pub struct WindowMeter {
    limits: HistoryLimits,
    messages: u32,
    bytes: usize,
}

impl WindowMeter {
    /// An empty window.
    pub fn new(limits: HistoryLimits) -> Self {
        Self {
            limits,
            messages: 0,
            bytes: 0,
        }
    }

    /// Whether the next older message, of `size` bytes, still fits.
    pub fn admits(&mut self, size: usize) -> bool {
        let bytes = self.bytes.saturating_add(size);
        if self.messages > 0
            && (self.messages >= self.limits.max_messages || bytes > self.limits.max_bytes)
        {
            return false;
        }
        self.messages += 1;
        self.bytes = bytes;
        true
    }
}
