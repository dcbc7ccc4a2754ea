//! The streamable HTTP transport: rmcp's client with bounded answers, SSE
//! answers read as plain JSON, and the standalone stream awaited.

pub mod capped;
pub mod sse_answer;
pub mod standalone_stream;
