//! The MCP handler: tools, resources and prompts.

use std::{
    sync::{
        Arc, LazyLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
        DiscoverRequestMethod, DiscoverResult, GetPromptRequestParams, GetPromptResponse,
        GetPromptResult, GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams,
        InitializeResult, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
        ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument,
        PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
        Resource, ResourceContents, ResourceTemplate, Role, ServerCapabilities, ServerConfig,
        SubscriptionFilter, Tool, UpdateTaskParams,
    },
    service::{Peer, RequestContext, SubscriptionContext},
};
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::{
    confirm::{self, CONFIRM_TOOL},
    cut::ConnectionCutter,
    data::{self, EMBEDDED_TEXT, EMBEDDED_URI, LOGO_URI, README_URI, SALES_BY_REGION_TEMPLATE},
    listen::Listeners,
    stats::Stats,
    tasks::{self, TASK_CONFIRM_TOOL, Tasks},
};

/// Name the server reports in its implementation info.
pub const SERVER_NAME: &str = "switchboard-example";
/// Instructions the server reports to clients.
pub const SERVER_INSTRUCTIONS: &str = "Example MCP server for Switchboard.";
/// How many tools one `tools/list` page holds; clients follow `next_cursor` for the rest.
pub const TOOLS_PAGE_SIZE: usize = 3;
/// Name of an unlisted tool that, over HTTP, drops the server's open
/// connections once it has the request, and never answers: a network that
/// fails after the request was delivered. Over stdio it ends the process.
pub const DROP_CONNECTION_TOOL: &str = "drop_connection";
/// Name of the tool that `add_tool` makes visible.
pub const EXTRA_TOOL: &str = "extra";
/// Largest payload the `big` tool produces, so a caller cannot make the server
/// allocate without bound.
pub const MAX_BIG_BYTES: usize = 64 * 1024 * 1024;

/// The MCP handler of one session.
///
/// Every session of one server shares its [`Stats`] and its tool list (so an
/// `add_tool` call is visible to all of them) but has its own `counter`.
#[derive(Debug)]
pub struct ExampleServer {
    stats: Arc<Stats>,
    tool_list: Arc<ToolList>,
    counter: AtomicU64,
    discovery_delay: Duration,
    endless_tool_pages: bool,
    record_tool: bool,
    confirm_tool: bool,
    initialize_only: bool,
    cutter: Option<ConnectionCutter>,
    tasks: Tasks,
}

/// Tool-list state shared by every session of one server.
#[derive(Debug, Default)]
pub(crate) struct ToolList {
    extra_visible: AtomicBool,
    listeners: Listeners,
}

impl ToolList {
    /// Makes [`EXTRA_TOOL`] visible; tells the open listen streams when
    /// that changed the list. Returns whether it did.
    pub(crate) async fn add_extra(&self) -> bool {
        let added = !self.extra_visible.swap(true, Ordering::SeqCst);
        if added {
            self.listeners.tools_changed().await;
        }
        added
    }

    /// How many listen streams were opened and not yet found closed.
    pub(crate) async fn listening(&self) -> usize {
        self.listeners.count().await
    }
}

impl ExampleServer {
    /// A handler for the first session of a new server that records into `stats`.
    pub fn new(stats: Arc<Stats>) -> Self {
        Self {
            stats,
            tool_list: Arc::default(),
            counter: AtomicU64::new(0),
            discovery_delay: Duration::ZERO,
            endless_tool_pages: false,
            record_tool: false,
            confirm_tool: false,
            initialize_only: false,
            cutter: None,
            tasks: Tasks::default(),
        }
    }

    /// Speaks only the initialize-era lifecycle: `server/discover` is
    /// refused as unknown, as servers of 2025-11-25 and earlier refuse it.
    pub fn with_initialize_only(mut self, initialize_only: bool) -> Self {
        self.initialize_only = initialize_only;
        self
    }

    /// Makes every `tools/list` page name a next page, forever.
    pub fn with_endless_tool_pages(mut self, endless: bool) -> Self {
        self.endless_tool_pages = endless;
        self
    }

    /// Lists [`RECORD_TOOL`], which returns the arguments it received.
    pub fn with_record_tool(mut self, listed: bool) -> Self {
        self.record_tool = listed;
        self
    }

    /// Lists [`CONFIRM_TOOL`] and [`TASK_CONFIRM_TOOL`], which ask the
    /// client to confirm their action before they finish.
    pub fn with_confirm_tool(mut self, listed: bool) -> Self {
        self.confirm_tool = listed;
        self
    }

    /// Lets [`DROP_CONNECTION_TOOL`] drop connections with `cutter`.
    pub(crate) fn with_connection_cutter(mut self, cutter: ConnectionCutter) -> Self {
        self.cutter = Some(cutter);
        self
    }

    /// Delays the answer to every listing (the first page of tools, and
    /// resources, resource templates and prompts) by `delay`.
    pub fn with_discovery_delay(mut self, delay: Duration) -> Self {
        self.discovery_delay = delay;
        self
    }

    /// Counts a listing in the statistics and waits out the discovery
    /// delay, if any.
    async fn slow_listing(&self) {
        let _serving = self.stats.listing();
        if !self.discovery_delay.is_zero() {
            tokio::time::sleep(self.discovery_delay).await;
        }
    }

    /// A handler for another session of the same server: it shares the
    /// statistics and the tool list, and starts its own counter at zero.
    pub fn new_session(&self) -> Self {
        Self {
            stats: Arc::clone(&self.stats),
            tool_list: Arc::clone(&self.tool_list),
            counter: AtomicU64::new(0),
            discovery_delay: self.discovery_delay,
            endless_tool_pages: self.endless_tool_pages,
            record_tool: self.record_tool,
            confirm_tool: self.confirm_tool,
            initialize_only: self.initialize_only,
            cutter: self.cutter.clone(),
            tasks: self.tasks.clone(),
        }
    }

    /// The statistics this handler records into.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// The tool list this handler's sessions share.
    pub(crate) fn tool_list(&self) -> Arc<ToolList> {
        Arc::clone(&self.tool_list)
    }

    fn visible_tools(&self) -> Vec<Tool> {
        let mut tools = BASE_TOOLS.clone();
        if self.tool_list.extra_visible.load(Ordering::SeqCst) {
            tools.push(EXTRA.clone());
        }
        if self.record_tool {
            tools.push(RECORD.clone());
        }
        if self.confirm_tool {
            tools.push(confirm::tool(CONFIRM_TOOL));
            tools.push(confirm::tool(TASK_CONFIRM_TOOL));
        }
        tools
    }

    async fn sleep(&self, ms: u64, ct: CancellationToken) -> CallToolResult {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(ms)) => {
                CallToolResult::success(vec![ContentBlock::text(format!("slept {ms}ms"))])
            }
            () = ct.cancelled() => {
                self.stats.record_cancellation();
                tracing::debug!(ms, "sleep cancelled by the client");
                // The client has abandoned the request, so this result is
                // normally dropped; it still says what happened.
                CallToolResult::error(vec![ContentBlock::text("cancelled")])
            }
        }
    }

    async fn drop_connection(&self, ct: CancellationToken) -> CallToolResult {
        match &self.cutter {
            Some(cutter) => cutter.cut(),
            // Stdio: the connection is the process.
            None => std::process::exit(3),
        }
        // No answer: the request was delivered, its answer never comes.
        ct.cancelled().await;
        CallToolResult::error(vec![ContentBlock::text("cancelled")])
    }

    async fn add_extra_tool(&self, peer: &Peer<RoleServer>) -> CallToolResult {
        let added = self.tool_list.add_extra().await;
        if !added {
            return CallToolResult::success(vec![ContentBlock::text(format!(
                "tool {EXTRA_TOOL} was already present"
            ))]);
        }
        // The notification goes to the calling session too: it is the one
        // that asked for the change and waits to see it.
        if let Err(error) = peer.notify_tool_list_changed().await {
            tracing::warn!(%error, "failed to send tools/list_changed");
        }
        CallToolResult::success(vec![ContentBlock::text(format!("added tool {EXTRA_TOOL}"))])
    }
}

/// Environment variable naming a file each tool call is appended to (its
/// tool name, one line): a record that outlives the process, for tests of
/// stdio servers that die mid-call.
pub const CALL_LOG_ENV: &str = "SWITCHBOARD_EXAMPLE_CALL_LOG";

fn log_call(name: &str) {
    use std::io::Write as _;
    let Some(path) = std::env::var_os(CALL_LOG_ENV) else {
        return;
    };
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut file| writeln!(file, "{name}"));
    if let Err(error) = appended {
        tracing::warn!(%error, "failed to log the tool call");
    }
}

#[derive(Deserialize)]
struct TextArgs {
    text: String,
}

#[derive(Deserialize)]
struct AddArgs {
    a: f64,
    b: f64,
}

#[derive(Deserialize)]
struct FailArgs {
    message: String,
}

#[derive(Deserialize)]
struct SleepArgs {
    ms: u64,
}

#[derive(Deserialize)]
struct BigArgs {
    bytes: usize,
}

fn parse_args<T: DeserializeOwned>(arguments: Option<JsonObject>) -> Result<T, McpError> {
    serde_json::from_value(Value::Object(arguments.unwrap_or_default()))
        .map_err(|error| McpError::invalid_params(format!("invalid arguments: {error}"), None))
}

fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// A JSON Schema object whose listed properties are all required.
/// Each property is `(name, JSON type, description)`.
fn object_schema(properties: &[(&str, &str, &str)]) -> Arc<JsonObject> {
    let mut props = JsonObject::new();
    for (name, kind, description) in properties {
        let mut property = json!({ "type": kind, "description": description });
        if *kind == "integer"
            && let Some(property) = property.as_object_mut()
        {
            property.insert("minimum".into(), json!(0));
        }
        props.insert((*name).to_owned(), property);
    }
    let required: Vec<&str> = properties.iter().map(|(name, _, _)| *name).collect();
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(props));
    schema.insert("required".into(), json!(required));
    Arc::new(schema)
}

static BASE_TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    vec![
        Tool::new(
            "echo",
            "Returns the given text.",
            object_schema(&[("text", "string", "Text to return")]),
        ),
        Tool::new(
            "add",
            "Adds two numbers; the sum comes back as text and as structured content.",
            object_schema(&[
                ("a", "number", "First addend"),
                ("b", "number", "Second addend"),
            ]),
        )
        .with_raw_output_schema(object_schema(&[("sum", "number", "a + b")])),
        Tool::new(
            "fail",
            "Returns a tool error carrying the given message.",
            object_schema(&[("message", "string", "Error message")]),
        ),
        Tool::new(
            "sleep",
            "Sleeps for the given milliseconds; stops early when the call is cancelled.",
            object_schema(&[("ms", "integer", "Milliseconds to sleep")]),
        ),
        Tool::new(
            "big",
            "Returns one text block of exactly the given size in bytes.",
            object_schema(&[("bytes", "integer", "Size of the text in bytes")]),
        ),
        Tool::new(
            "mixed",
            "Returns one content block of each kind: text, image, audio, embedded resource and resource link.",
            object_schema(&[]),
        ),
        Tool::new(
            "counter",
            "Increments a counter kept per MCP session and returns its new value.",
            object_schema(&[]),
        ),
        Tool::new(
            "add_tool",
            "Makes the `extra` tool visible and notifies the client that the tool list changed.",
            object_schema(&[]),
        ),
        Tool::new(
            "stats",
            "Returns the server's statistics as JSON.",
            object_schema(&[]),
        ),
        Tool::new(
            "process",
            "Returns the server's process id and the names of its environment variables.",
            object_schema(&[]),
        ),
    ]
});

/// A tool listed only when the server is asked to
/// ([`ExampleServer::with_record_tool`]): it returns the arguments it
/// received, exactly, as its structured result and no text, for tests of
/// JSON that must travel unchanged (64-bit integers, `1.0`).
pub const RECORD_TOOL: &str = "record";

static RECORD: LazyLock<Tool> = LazyLock::new(|| {
    Tool::new(
        RECORD_TOOL,
        "Returns the arguments it received, exactly, as its structured result (and no text).",
        Arc::new(serde_json::Map::from_iter([
            ("type".to_owned(), json!("object")),
            ("additionalProperties".to_owned(), json!(true)),
        ])),
    )
});

static EXTRA: LazyLock<Tool> = LazyLock::new(|| {
    Tool::new(
        EXTRA_TOOL,
        "A tool that appears once `add_tool` has been called.",
        object_schema(&[]),
    )
});

fn sales_resource() -> Resource {
    Resource::new(data::SALES_URI, "sales")
        .with_description("Sales by region and product")
        .with_mime_type("text/csv")
}

fn resources() -> Vec<Resource> {
    vec![
        sales_resource(),
        Resource::new(README_URI, "readme")
            .with_description("What this server offers")
            .with_mime_type("text/plain"),
        Resource::new(LOGO_URI, "logo")
            .with_description("A tiny logo")
            .with_mime_type("image/png")
            .with_size(data::PNG_BYTES.len() as u64),
    ]
}

fn summarize_prompt() -> Prompt {
    Prompt::new(
        "summarize",
        Some("Asks for a summary of a topic"),
        Some(vec![
            PromptArgument::new("topic")
                .with_description("What to summarize")
                .with_required(true),
            PromptArgument::new("style")
                .with_description("How to write the summary (default: concise)")
                .with_required(false),
        ]),
    )
}

fn string_argument<'a>(
    arguments: Option<&'a JsonObject>,
    name: &str,
) -> Result<Option<&'a str>, McpError> {
    match arguments.and_then(|arguments| arguments.get(name)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value)),
        Some(_) => Err(McpError::invalid_params(
            format!("argument {name} must be a string"),
            None,
        )),
    }
}

impl ServerHandler for ExampleServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
        .with_instructions(SERVER_INSTRUCTIONS)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // The SDK keeps only what the capabilities advertise: tool list changes.
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        self.tool_list.listeners.add(context.sink().clone()).await;
        context.cancelled().await;
        Ok(())
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        if self.initialize_only {
            return Err(McpError::method_not_found::<DiscoverRequestMethod>());
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        // Same as the default handshake, plus the session count.
        context.peer.set_peer_info(request.clone());
        let result = self.negotiate_initialize(&request)?;
        self.stats.record_session();
        tracing::debug!(protocol_version = %result.protocol_version, "session initialized");
        Ok(result)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if request.as_ref().is_none_or(|r| r.cursor.is_none()) {
            self.slow_listing().await;
        }
        let tools = self.visible_tools();
        if self.endless_tool_pages {
            // The same page again and again, each naming one more after it.
            let start = request
                .and_then(|request| request.cursor)
                .and_then(|cursor| cursor.parse::<usize>().ok())
                .unwrap_or(0);
            let page: Vec<Tool> = tools.into_iter().take(TOOLS_PAGE_SIZE).collect();
            return Ok(ListToolsResult {
                next_cursor: Some(start.saturating_add(TOOLS_PAGE_SIZE).to_string()),
                ..ListToolsResult::with_all_items(page)
            });
        }
        let start = match request.and_then(|request| request.cursor) {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|start| *start <= tools.len())
                .ok_or_else(|| {
                    McpError::invalid_params(format!("invalid cursor: {cursor}"), None)
                })?,
        };
        let total = tools.len();
        let end = start.saturating_add(TOOLS_PAGE_SIZE).min(total);
        let page: Vec<Tool> = tools.into_iter().skip(start).take(end - start).collect();
        Ok(ListToolsResult {
            next_cursor: (end < total).then(|| end.to_string()),
            ..ListToolsResult::with_all_items(page)
        })
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.visible_tools()
            .into_iter()
            .find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.stats.record_tool_call();
        let name = request.name.as_ref();
        log_call(name);
        tracing::debug!(tool = name, "tool call");
        if name == CONFIRM_TOOL {
            return confirm::call(&request);
        }
        if tasks::is_task_tool(name) {
            return self.tasks.call(&request, &context);
        }
        let arguments = request.arguments;
        let result = match name {
            "echo" => {
                let TextArgs { text } = parse_args(arguments)?;
                text_result(text)
            }
            "add" => {
                let AddArgs { a, b } = parse_args(arguments)?;
                let sum = a + b;
                let mut result = text_result(sum.to_string());
                result.structured_content = Some(json!({ "sum": sum }));
                result
            }
            "fail" => {
                let FailArgs { message } = parse_args(arguments)?;
                CallToolResult::error(vec![ContentBlock::text(message)])
            }
            "sleep" => {
                let SleepArgs { ms } = parse_args(arguments)?;
                self.sleep(ms, context.ct).await
            }
            "big" => {
                let BigArgs { bytes } = parse_args(arguments)?;
                if bytes > MAX_BIG_BYTES {
                    return Err(McpError::invalid_params(
                        format!("bytes must be at most {MAX_BIG_BYTES}"),
                        None,
                    ));
                }
                text_result("x".repeat(bytes))
            }
            "mixed" => CallToolResult::success(vec![
                ContentBlock::text("mixed content"),
                ContentBlock::image(data::base64(data::PNG_BYTES), "image/png"),
                ContentBlock::audio(data::base64(data::WAV_BYTES), "audio/wav"),
                ContentBlock::resource(ResourceContents::text(EMBEDDED_TEXT, EMBEDDED_URI)),
                ContentBlock::resource_link(sales_resource()),
            ]),
            "counter" => {
                let value = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
                text_result(value.to_string())
            }
            "add_tool" => self.add_extra_tool(&context.peer).await,
            DROP_CONNECTION_TOOL => self.drop_connection(context.ct).await,
            "stats" => CallToolResult::success(vec![ContentBlock::json(self.stats.snapshot())?]),
            RECORD_TOOL if self.record_tool => {
                let mut result = CallToolResult::success(Vec::new());
                result.structured_content = Some(json!({ "received": arguments }));
                result
            }
            "process" => {
                let mut env: Vec<String> = std::env::vars_os()
                    .map(|(name, _)| name.to_string_lossy().into_owned())
                    .collect();
                env.sort();
                CallToolResult::success(vec![ContentBlock::json(serde_json::json!({
                    "pid": std::process::id(),
                    "env": env,
                }))?])
            }
            EXTRA_TOOL if self.tool_list.extra_visible.load(Ordering::SeqCst) => {
                text_result("extra tool called")
            }
            other => {
                return Err(McpError::invalid_params(
                    format!("unknown tool: {other}"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let task = self.tasks.manager().get_task(&request.task_id)?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .manager()
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        tasks::cancel(&self.tasks, &self.stats, &request.task_id)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.slow_listing().await;
        Ok(ListResourcesResult::with_all_items(resources()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.slow_listing().await;
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(SALES_BY_REGION_TEMPLATE, "sales_by_region")
                .with_description("Sales of one region")
                .with_mime_type("text/csv"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let contents = match uri.as_str() {
            data::SALES_URI => {
                ResourceContents::text(data::sales_csv(), &uri).with_mime_type("text/csv")
            }
            README_URI => ResourceContents::text(data::README_TEXT, &uri),
            LOGO_URI => ResourceContents::blob(data::base64(data::PNG_BYTES), &uri)
                .with_mime_type("image/png"),
            // Unlisted, for tests: CSV as a blob, and CSV built to amplify.
            data::SALES_BLOB_URI => {
                ResourceContents::blob(data::base64(data::sales_csv().as_bytes()), &uri)
                    .with_mime_type("text/csv")
            }
            data::SHORT_ROWS_URI => {
                ResourceContents::text(data::short_rows_csv(), &uri).with_mime_type("text/csv")
            }
            other => match data::region_from_uri(other).and_then(data::sales_csv_for_region) {
                Some(csv) => ResourceContents::text(csv, &uri).with_mime_type("text/csv"),
                None => {
                    return Err(McpError::resource_not_found(
                        format!("resource not found: {uri}"),
                        Some(json!({ "uri": uri })),
                    ));
                }
            },
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.slow_listing().await;
        Ok(ListPromptsResult::with_all_items(vec![summarize_prompt()]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name == CONFIRM_TOOL {
            return confirm::prompt(&request);
        }
        if request.name != "summarize" {
            return Err(McpError::invalid_params(
                format!("unknown prompt: {}", request.name),
                None,
            ));
        }
        let arguments = request.arguments.as_ref();
        let topic = string_argument(arguments, "topic")?
            .ok_or_else(|| McpError::invalid_params("missing required argument: topic", None))?;
        let style = string_argument(arguments, "style")?.unwrap_or("concise");
        let result = GetPromptResult::new(vec![
            PromptMessage::new_text(Role::User, format!("Summarize {topic} in a {style} style.")),
            PromptMessage::new_text(Role::Assistant, format!("Here is a summary of {topic}:")),
        ])
        .with_description(format!("Summary of {topic}"));
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_has_ten_tools_with_unique_names() {
        let mut names: Vec<&str> = BASE_TOOLS.iter().map(|tool| tool.name.as_ref()).collect();
        assert_eq!(names.len(), 10);
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 10);
        assert!(!names.contains(&EXTRA_TOOL));
    }

    #[test]
    fn sessions_share_the_tool_list_but_not_the_counter() {
        let first = ExampleServer::new(Arc::default());
        first.counter.fetch_add(5, Ordering::SeqCst);
        first.tool_list.extra_visible.store(true, Ordering::SeqCst);
        let second = first.new_session();
        assert_eq!(second.counter.load(Ordering::SeqCst), 0);
        assert_eq!(second.visible_tools().len(), 11);
        assert!(Arc::ptr_eq(first.stats(), second.stats()));
    }
}
