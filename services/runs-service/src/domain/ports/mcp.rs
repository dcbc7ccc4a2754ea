//! The mcp-service port: what runs-service asks of MCP integrations.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::Caller;
use crate::domain::{
    entities::{ApprovalAsked, InputAnswers, InputRequired},
    ids::IntegrationId,
};

/// A tool of an MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The server's own name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: Value,
    /// JSON Schema of its structured result, when it declares one.
    pub output_schema: Option<Value>,
}

/// A resource of an MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpResource {
    /// URI, or URI template for templates.
    pub uri: String,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// MIME type.
    pub mime_type: String,
}

/// A prompt argument.
#[derive(Debug, Clone, PartialEq)]
pub struct McpPromptArgument {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Whether it is required.
    pub required: bool,
}

/// A prompt of an MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpPrompt {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Arguments.
    pub arguments: Vec<McpPromptArgument>,
}

/// What one integration offers.
#[derive(Debug, Clone, PartialEq)]
pub struct Capabilities {
    /// The integration id.
    pub integration_id: IntegrationId,
    /// Its slug, the tool-name prefix.
    pub slug: String,
    /// Its tools.
    pub tools: Vec<McpTool>,
    /// Its resources.
    pub resources: Vec<McpResource>,
    /// Its resource templates.
    pub resource_templates: Vec<McpResource>,
    /// Its prompts.
    pub prompts: Vec<McpPrompt>,
}

/// What a tool call returned, as mcp-service reported it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolOutput {
    /// Why the call failed; `None` when it succeeded.
    pub failure: Option<ToolFailure>,
    /// mcp-service's description of the failure: what the model reads only
    /// when `facts` are absent (an older mcp-service, an unknown reason);
    /// for [`ToolFailure::ToolError`] the model reads the tool's own text
    /// blocks in `content` instead.
    pub error_message: String,
    /// The content, as the server sent it.
    pub content: Vec<Content>,
    /// The structured result as exact JSON text, when the tool sent one.
    pub structured: Option<String>,
    /// What the server asks the caller, when `failure` is
    /// [`ToolFailure::InputRequired`].
    pub input_required: Option<InputRequired>,
    /// The approval the call waits for, when `failure` is
    /// [`ToolFailure::ApprovalRequired`], or the one that was denied
    /// ([`ToolFailure::ApprovalDenied`]).
    pub approval: Option<ApprovalAsked>,
    /// The approver's words, when `failure` is
    /// [`ToolFailure::ApprovalDenied`].
    pub denial_comment: Option<String>,
    /// What mcp-service reported beside the reason of `failure`: the model's
    /// text is worded from these here (`texts::tool_output`), not taken
    /// from mcp-service's description.
    pub facts: Option<FailureFacts>,
    /// What mcp-service's guardrails redacted in the result, by detector
    /// (`aws_access_key`, …) and count: the model is told.
    pub redacted: Vec<(String, u32)>,
}

/// The facts of a failed tool call, one variant per reason that has some:
/// numbers as numbers, the words of the layer below mcp-service as it wrote
/// them. Each variant comes only with its own [`ToolFailure`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureFacts {
    /// The time limit the tool did not answer within.
    Timeout(Duration),
    /// The largest result mcp-service accepts, in bytes.
    TooLarge {
        /// The limit.
        limit_bytes: usize,
    },
    /// What the connection or the MCP handshake reported; the call was not
    /// delivered.
    Unreachable {
        /// The connection's words.
        detail: String,
    },
    /// What the connection reported when it broke during the call.
    ConnectionLost {
        /// The connection's words.
        detail: String,
    },
    /// The JSON-RPC error the server answered with.
    JsonRpc {
        /// Its code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// A listing went past a bound of mcp-service.
    ListingBound {
        /// Which bound.
        detail: String,
    },
    /// A limit of mcp-service itself was reached; nothing reached the server.
    LimitReached {
        /// Which limit.
        detail: String,
        /// When trying again may succeed.
        retry_after: Duration,
    },
}

/// Why a tool call produced an error result (the contract's
/// `ToolFailureReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFailure {
    /// The tool ran and reported an error.
    ToolError,
    /// The tool did not answer in time.
    Timeout,
    /// The result was larger than mcp-service accepts.
    TooLarge,
    /// The server could not be reached; the call was not delivered.
    Unreachable,
    /// The connection broke after the call may have been delivered.
    ConnectionLost,
    /// The server answered with a JSON-RPC error.
    Protocol,
    /// The server wants the user's authorization (OAuth).
    AuthorizationRequired,
    /// The server asks the caller something before it completes the call.
    InputRequired,
    /// A limit of mcp-service itself was reached; trying later may work.
    LimitReached,
    /// A policy rule gates the call behind an approval; the tool has not run.
    ApprovalRequired,
    /// The call's approval was denied; the tool has not run.
    ApprovalDenied,
    /// A reason this version does not know (a newer mcp-service).
    Other,
}

/// One block of MCP content (a tool result's, a resource's, a prompt's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Text.
    Text(String),
    /// An image: its MIME type and size.
    Image {
        /// MIME type.
        mime_type: String,
        /// Size in bytes.
        bytes: usize,
    },
    /// Audio: its MIME type and size.
    Audio {
        /// MIME type.
        mime_type: String,
        /// Size in bytes.
        bytes: usize,
    },
    /// An embedded resource.
    Resource {
        /// Its URI.
        uri: String,
        /// MIME type.
        mime_type: String,
        /// Its text, when it is text.
        text: Option<String>,
        /// Its size in bytes, when it is binary.
        blob_bytes: Option<usize>,
    },
    /// A link to a resource.
    ResourceLink {
        /// Its URI.
        uri: String,
        /// Its name.
        name: String,
    },
}

/// Why a call to mcp-service produced no result: its gRPC status, typed in
/// one place (the adapter). The messages are mcp-service's own, meant for
/// the model.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum McpCallError {
    /// No answer in time.
    #[error("the call to mcp-service timed out")]
    Timeout,
    /// mcp-service could not be reached.
    #[error("mcp-service is unavailable ({0})")]
    Unavailable(String),
    /// A limit of mcp-service or of the organization; trying later may work.
    #[error("{message}")]
    Exhausted {
        /// mcp-service's message.
        message: String,
        /// When, if mcp-service said.
        retry_after: Option<Duration>,
    },
    /// The integration does not exist in the caller's organization.
    #[error("{0}")]
    NotFound(String),
    /// The user has not connected their account to the integration's server
    /// (OAuth), or must connect it again.
    #[error("the user has not connected their account to this integration")]
    AuthorizationRequired {
        /// Where the user's browser goes to connect it.
        url: String,
    },
    /// The call is not allowed as it stands (a disabled integration, missing
    /// permission, invalid input).
    #[error("{0}")]
    Refused(String),
    /// The MCP server failed the call, as mcp-service reported it: the facts
    /// to word, and mcp-service's own description.
    #[error("{message}")]
    Server {
        /// What happened, in numbers and the lower layer's words.
        facts: FailureFacts,
        /// mcp-service's description, for logs.
        message: String,
    },
    /// The approval the call presented is still waiting for an approver.
    #[error("the approval is still waiting for an approver")]
    ApprovalPending,
    /// The approval the call presented cannot be used: it was used
    /// already, or it expired.
    #[error("{message}")]
    ApprovalUnusable {
        /// Which.
        why: ApprovalUnusable,
        /// mcp-service's message.
        message: String,
    },
    /// Anything else mcp-service answered.
    #[error("{0}")]
    Failed(String),
}

impl McpCallError {
    /// The error's type as logs carry it (`error_type`): stable words,
    /// never the message's.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::Unavailable(_) => "unavailable",
            Self::Exhausted { .. } => "exhausted",
            Self::NotFound(_) => "not_found",
            Self::AuthorizationRequired { .. } => "authorization_required",
            Self::Refused(_) => "refused",
            Self::Server { .. } => "server",
            Self::ApprovalPending => "approval_pending",
            Self::ApprovalUnusable { .. } => "approval_unusable",
            Self::Failed(_) => "failed",
        }
    }
}

/// Why a presented approval could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalUnusable {
    /// Its call was made once already.
    Used,
    /// It was not decided, or not used, in time.
    Expired,
}

/// Why the run's caller's decision of an approval was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// The approval was decided already (or expired undecided): its
    /// decision stands.
    #[error("the approval is decided already")]
    Settled,
    /// The caller may not decide it (no approver role, or their own call
    /// under a rule that does not let them).
    #[error("{0}")]
    NotAllowed(String),
    /// The approval does not exist in the caller's organization.
    #[error("{0}")]
    NotFound(String),
    /// The decision is not acceptable as sent (a comment too long).
    #[error("{0}")]
    Invalid(String),
    /// mcp-service failed otherwise.
    #[error(transparent)]
    Call(McpCallError),
}

/// The run's caller's decision of an approval.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalDecision<'a> {
    /// The approval's id.
    pub approval_id: &'a str,
    /// Approve or deny.
    pub approve: bool,
    /// The caller's words.
    pub comment: &'a str,
}

/// A resource read through mcp-service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceData {
    /// The URI read (templates expanded).
    pub uri: String,
    /// MIME type.
    pub mime_type: String,
    /// What it holds.
    pub kind: ResourceKindOf,
    /// Text contents (CSV or text).
    pub text: Option<String>,
    /// Size of binary contents.
    pub blob_len: usize,
    /// Binary contents of a CSV resource (a server may send CSV as a blob);
    /// empty for other kinds, whose blobs are only described.
    pub csv_blob: Vec<u8>,
    /// What mcp-service's guardrails redacted in the contents, by detector
    /// name, with how many.
    pub redacted: Vec<(String, u32)>,
}

/// The kind of a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKindOf {
    /// CSV.
    Csv,
    /// Text.
    Text,
    /// Binary.
    Binary,
}

/// A rendered prompt message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptLine {
    /// `user` or `assistant`.
    pub role: String,
    /// What it says.
    pub content: Content,
}

/// One call of a server's tool.
#[derive(Debug, Clone, Copy)]
pub struct McpToolRequest<'a> {
    /// The integration.
    pub integration_id: IntegrationId,
    /// The server's own tool name.
    pub tool: &'a str,
    /// The exact JSON text of the arguments, an object.
    pub arguments: &'a str,
    /// The upstream session's key (the thread).
    pub scope: &'a str,
    /// The caller's answers to what the server asked when this call was
    /// made before; `None` for a new call.
    pub answers: Option<&'a InputAnswers>,
    /// The approval this call was gated by, when it is made again after
    /// one was asked for; `None` for a new call.
    pub approval_id: Option<&'a str>,
    /// The agent's allow-list of this integration's tools, passed along so
    /// that mcp-service enforces it too; `None` when the agent has none.
    pub allowed_tools: Option<&'a [String]>,
}

/// One read of a server's resource.
#[derive(Debug, Clone, Copy)]
pub struct McpResourceRequest<'a> {
    /// The integration.
    pub integration_id: IntegrationId,
    /// The resource URI or RFC 6570 URI template.
    pub uri: &'a str,
    /// Values for the template's variables, sent as exact JSON.
    pub parameters: &'a Map<String, Value>,
    /// The upstream session's key (the thread).
    pub scope: &'a str,
}

/// One rendering of a server's prompt.
#[derive(Debug, Clone, Copy)]
pub struct McpPromptRequest<'a> {
    /// The integration.
    pub integration_id: IntegrationId,
    /// The prompt's name.
    pub name: &'a str,
    /// Its arguments as the model gave them, sent as exact JSON (mcp-service
    /// turns each into the string MCP prompts take).
    pub arguments: &'a Map<String, Value>,
    /// The upstream session's key (the thread).
    pub scope: &'a str,
}

/// mcp-service, as runs-service uses it.
#[async_trait]
pub trait McpPort: Send + Sync + 'static {
    /// Lists an integration's capabilities.
    async fn discover(
        &self,
        caller: &Caller,
        integration_id: IntegrationId,
        allowed_tools: Option<&[String]>,
        timeout: Duration,
    ) -> Result<Capabilities, McpCallError>;
    /// Calls a tool.
    async fn execute_tool(
        &self,
        caller: &Caller,
        call: McpToolRequest<'_>,
        timeout: Duration,
    ) -> Result<ToolOutput, McpCallError>;
    /// Reads a resource, expanding a template with its parameters.
    async fn retrieve_resource(
        &self,
        caller: &Caller,
        read: McpResourceRequest<'_>,
        timeout: Duration,
    ) -> Result<ResourceData, McpCallError>;
    /// Renders a prompt.
    async fn get_prompt(
        &self,
        caller: &Caller,
        prompt: McpPromptRequest<'_>,
        timeout: Duration,
    ) -> Result<(String, Vec<PromptLine>), McpCallError>;
    /// Decides an approval as the caller.
    async fn decide_approval(
        &self,
        caller: &Caller,
        decision: ApprovalDecision<'_>,
        timeout: Duration,
    ) -> Result<(), DecideError>;
}
