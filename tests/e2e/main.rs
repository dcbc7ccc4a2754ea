//! End-to-end tests: both services on loopback, called as other teams call them.

mod polyglot;
