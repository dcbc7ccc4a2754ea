//! The MCP handler: tools, resources and prompts.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
        DiscoverRequestMethod, DiscoverResult, GetPromptRequestParams, GetPromptResponse,
        GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams, InitializeResult,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
        PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
        ReadResourceResult, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
        UpdateTaskParams,
    },
    service::{Peer, RequestContext, SubscriptionContext},
};
use tokio_util::sync::CancellationToken;

use crate::{
    calls::{self, SleepArgs, log_call, parse_args, text_result},
    catalog::{
        self, BASE_TOOLS, EXTRA, EXTRA_TOOL, RECORD, RECORD_TOOL, resources, summarize_prompt,
    },
    confirm::{self, CONFIRM_TOOL},
    cut::ConnectionCutter,
    rows,
    stats::Stats,
    tasks::{self, TASK_CONFIRM_TOOL, Tasks},
    tool_list::{CHANGED_ECHO_DESCRIPTION, ToolList},
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
    rows_tool: bool,
    confirm_tool: bool,
    /// When not empty, listed instead of the server's own tools.
    catalog: Arc<[Tool]>,
    initialize_only: bool,
    cutter: Option<ConnectionCutter>,
    tasks: Tasks,
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
            rows_tool: false,
            confirm_tool: false,
            catalog: Arc::new([]),
            initialize_only: false,
            cutter: None,
            tasks: Tasks::default(),
        }
    }

    /// Lists `catalog` instead of the server's own tools: each answers
    /// with its name and the arguments it was given.
    pub fn with_catalog(mut self, catalog: Vec<Tool>) -> Self {
        self.catalog = catalog.into();
        self
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

    /// Lists [`crate::SALES_ROWS_TOOL`], which returns as many rows as asked
    /// for as one JSON array.
    pub fn with_rows_tool(mut self, listed: bool) -> Self {
        self.rows_tool = listed;
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
            rows_tool: self.rows_tool,
            confirm_tool: self.confirm_tool,
            catalog: Arc::clone(&self.catalog),
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
        if !self.catalog.is_empty() {
            return self.catalog.to_vec();
        }
        let mut tools = BASE_TOOLS.clone();
        if self.tool_list.echo_changed.load(Ordering::SeqCst)
            && let Some(echo) = tools.iter_mut().find(|tool| tool.name == "echo")
        {
            echo.description = Some(CHANGED_ECHO_DESCRIPTION.into());
        }
        if self.tool_list.extra_visible.load(Ordering::SeqCst) {
            tools.push(EXTRA.clone());
        }
        if self.record_tool {
            tools.push(RECORD.clone());
        }
        tools.extend(self.rows_tool.then(rows::tool));
        if self.confirm_tool {
            tools.push(confirm::tool(CONFIRM_TOOL));
            tools.push(confirm::tool(TASK_CONFIRM_TOOL));
        }
        tools
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

impl ServerHandler for ExampleServer {
    fn get_info(&self) -> ServerConfig {
        // A server of a catalog offers its tools alone.
        let capabilities = if self.catalog.is_empty() {
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_tasks()
                .build()
        } else {
            ServerCapabilities::builder().enable_tools().build()
        };
        ServerConfig::new(capabilities)
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
        if let Some(tool) = self.catalog.iter().find(|tool| tool.name == name) {
            return Ok(calls::catalog(tool, arguments).into());
        }
        let result = match name {
            "echo" => calls::echo(arguments)?,
            "add" => calls::add(arguments)?,
            "fail" => calls::fail(arguments)?,
            "sleep" => {
                let SleepArgs { ms } = parse_args(arguments)?;
                calls::sleep(&self.stats, ms, context.ct).await
            }
            "big" => calls::big(arguments)?,
            "mixed" => calls::mixed(),
            "counter" => {
                let value = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
                text_result(value.to_string())
            }
            "add_tool" => self.add_extra_tool(&context.peer).await,
            DROP_CONNECTION_TOOL => self.drop_connection(context.ct).await,
            "stats" => CallToolResult::success(vec![ContentBlock::json(self.stats.snapshot())?]),
            RECORD_TOOL if self.record_tool => calls::record(arguments),
            rows::SALES_ROWS_TOOL if self.rows_tool => rows::call(arguments)?,
            "process" => calls::process()?,
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
        Ok(ListResourceTemplatesResult::with_all_items(
            catalog::resource_templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let contents = catalog::read(&request.uri)?;
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
        if request.name != catalog::SUMMARIZE_PROMPT {
            return Err(McpError::invalid_params(
                format!("unknown prompt: {}", request.name),
                None,
            ));
        }
        let result = catalog::summarize(request.arguments.as_ref())?;
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
