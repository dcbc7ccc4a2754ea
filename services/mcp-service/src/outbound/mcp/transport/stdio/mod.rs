//! The stdio transport: an allow-listed child process in a private home,
//! its output read in bounded lines.

pub mod child;
pub mod home;
pub mod lines;
