//! In-memory fakes of runs-service's ports, for unit tests of the run loop:
//! the loop's rules (step limits, pauses, cancellation, call order) are
//! tested here in milliseconds; the adapters are tested for real against
//! SQLite, PostgreSQL, mcp-service and model servers in `tests/`.

mod approvals;
mod mcp;
mod model;
mod repository;
mod sources;
mod usage;

pub use approvals::{APPROVER_ROLE, FakeApprovalState, FakeApprovals};
pub use mcp::{FakeMcp, ToolBehaviour};
pub use model::{FakeModels, ScriptedTurn};
pub use repository::MemoryRepository;
pub use sources::NoSources;
