//! The `switchboard.runs.v1.RunsService` handlers.

use switchboard_proto::runs::v1::runs_service_server::RunsService;

/// The runs-service API. RPCs not implemented here answer UNIMPLEMENTED.
#[derive(Debug, Default)]
pub(crate) struct RunsApi {}

impl RunsApi {
    pub(crate) fn new() -> Self {
        Self {}
    }
}

#[tonic::async_trait]
impl RunsService for RunsApi {}
