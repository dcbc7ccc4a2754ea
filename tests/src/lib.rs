//! End-to-end test support lives in the test binary.
