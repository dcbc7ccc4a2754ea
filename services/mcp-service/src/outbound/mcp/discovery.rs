//! Listing what a server offers, page by page, within limits.
//!
//! A server decides how many pages it returns (`nextCursor`) and how large
//! each is, so a hostile or broken one could keep a discovery going forever
//! or fill memory. Pages, items and bytes are bounded; at a bound discovery
//! stops with an error naming it rather than returning a truncated list: a
//! silently shortened tool list would hide tools from models and admins with
//! no sign of it, and let a server push real tools out of view.

use std::{
    future::Future,
    sync::atomic::{AtomicU64, AtomicUsize, Ordering},
    time::Duration,
};

use rmcp::{
    ServiceError,
    model::{PaginatedRequestParams, ProtocolVersion, Tool},
};
use serde::Serialize;

use crate::domain::ports::{ByteSize, Discovery, ServerIdentity};
use crate::outbound::{mcp::sessions::Live, telemetry::with_trace};

/// Bounds on one discovery.
#[derive(Debug, Clone, Copy)]
pub struct DiscoveryLimits {
    /// Pages followed per listing (tools, resources, templates, prompts).
    pub max_pages: usize,
    /// Items of all listings together.
    pub max_items: usize,
    /// Bytes (as JSON) of all listed items together.
    pub max_bytes: usize,
}

/// Why a discovery stopped.
#[derive(Debug)]
pub enum ListFailure {
    /// The session failed.
    Service(ServiceError),
    /// A bound was reached; the sentence says which.
    Limit(String),
}

impl From<ServiceError> for ListFailure {
    fn from(error: ServiceError) -> Self {
        Self::Service(error)
    }
}

impl std::fmt::Display for ListFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Service(error) => error.fmt(f),
            Self::Limit(message) => f.write_str(message),
        }
    }
}

/// What the listings of one discovery have used so far, and the shortest
/// freshness (`ttlMs`) their pages stated.
struct Budget {
    limits: DiscoveryLimits,
    items: AtomicUsize,
    bytes: AtomicUsize,
    ttl_ms: AtomicU64,
}

impl Budget {
    fn new(limits: DiscoveryLimits) -> Self {
        Self {
            limits,
            items: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            ttl_ms: AtomicU64::new(u64::MAX),
        }
    }

    /// Takes a page's `ttlMs` into account.
    fn fresh_for(&self, ttl_ms: Option<u64>) {
        if let Some(ttl_ms) = ttl_ms {
            self.ttl_ms.fetch_min(ttl_ms, Ordering::Relaxed);
        }
    }

    /// The shortest freshness stated, if any page stated one.
    fn freshness(&self) -> Option<Duration> {
        match self.ttl_ms.load(Ordering::Relaxed) {
            u64::MAX => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }
}

/// Counts the bytes written to it.
pub(crate) struct ByteCounter(pub usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(bytes.len());
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Budget {
    /// Takes `items` into the budget (their bytes counted as JSON), or says
    /// which bound they cross.
    fn take<T: Serialize>(&self, what: &str, items: Vec<T>) -> Result<Vec<T>, ListFailure> {
        let count = self.items.fetch_add(items.len(), Ordering::Relaxed) + items.len();
        if count > self.limits.max_items {
            return Err(ListFailure::Limit(format!(
                "discovery stopped: the server lists more than {} items (at {what})",
                self.limits.max_items
            )));
        }
        let mut values = Vec::with_capacity(items.len());
        for item in items {
            let mut counter = ByteCounter(0);
            if serde_json::to_writer(&mut counter, &item).is_err() {
                continue;
            }
            let bytes = self.bytes.fetch_add(counter.0, Ordering::Relaxed) + counter.0;
            if bytes > self.limits.max_bytes {
                return Err(ListFailure::Limit(format!(
                    "discovery stopped: the server's listings are larger than {} (at {what})",
                    ByteSize(self.limits.max_bytes)
                )));
            }
            values.push(item);
        }
        Ok(values)
    }
}

/// One page of a listing: its items, the next cursor and its `ttlMs`.
type Page<T> = (Vec<T>, Option<String>, Option<u64>);

/// Follows `fetch`'s cursors within the budget.
async fn paged<T, F, Fut>(
    what: &'static str,
    budget: &Budget,
    fetch: F,
) -> Result<Vec<T>, ListFailure>
where
    T: Serialize,
    F: Fn(PaginatedRequestParams) -> Fut,
    Fut: Future<Output = Result<Page<T>, ServiceError>>,
{
    let mut all = Vec::new();
    let mut cursor = None;
    for _ in 0..budget.limits.max_pages {
        let (items, next, ttl_ms) = fetch(with_trace(
            PaginatedRequestParams::default().with_cursor(cursor),
        ))
        .await?;
        budget.fresh_for(ttl_ms);
        all.extend(budget.take(what, items)?);
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(all),
        }
    }
    Err(ListFailure::Limit(format!(
        "discovery stopped: the server's {what} span more than {} pages",
        budget.limits.max_pages
    )))
}

/// What `live`'s server said about itself in the handshake.
pub fn server_identity(live: &Live) -> Option<ServerIdentity> {
    let info = live.session.peer_info()?;
    let implementation = info.server_info.clone().unwrap_or_default();
    Some(ServerIdentity {
        name: implementation.name,
        title: implementation.title,
        version: implementation.version,
        protocol_version: info.protocol_version.to_string(),
        instructions: info.instructions.clone(),
    })
}

/// Lists `live`'s tools once within `limits`, so that the session knows
/// their input schemas: from 2026-07-28 on, arguments a tool designates with
/// `x-mcp-header` travel as `Mcp-Param-*` headers of its calls too, and the
/// transport learns which from the listing on its own connection. Does
/// nothing for sessions of earlier versions or servers without tools.
pub async fn learn_tool_schemas(live: &Live, limits: DiscoveryLimits) -> Result<(), ListFailure> {
    let session = &live.session;
    let Some(info) = session.peer_info() else {
        return Ok(());
    };
    if info.protocol_version < ProtocolVersion::STANDARD_HEADERS
        || info.capabilities.tools.is_none()
    {
        return Ok(());
    }
    let budget = Budget::new(limits);
    paged("tools", &budget, |page| async move {
        session
            .list_tools(Some(page))
            .await
            .map(|result| (result.tools, result.next_cursor, result.ttl_ms))
    })
    .await
    .map(drop)
}

/// The items of `listing` when the server offers that capability; none
/// (and nothing asked) when it does not.
async fn offered<T>(
    offers: bool,
    listing: impl Future<Output = Result<Vec<T>, ListFailure>>,
) -> Result<Vec<T>, ListFailure> {
    if offers {
        listing.await
    } else {
        Ok(Vec::new())
    }
}

/// Everything `live`'s server offers, within `limits`.
pub async fn list_everything(
    live: &Live,
    limits: DiscoveryLimits,
) -> Result<Discovery, ListFailure> {
    let session = &live.session;
    let (Some(info), Some(server)) = (session.peer_info(), server_identity(live)) else {
        return Err(ServiceError::UnexpectedResponse.into());
    };
    let mut discovery = Discovery {
        server,
        ..Discovery::default()
    };
    let budget = Budget::new(limits);
    let budget = &budget;
    // The listings are independent: asked at once, discovery takes as long
    // as the slowest of them, not their sum.
    let capabilities = &info.capabilities;
    let (tools, resources, resource_templates, prompts) = tokio::try_join!(
        offered(
            capabilities.tools.is_some(),
            paged("tools", budget, |page| async move {
                session
                    .list_tools(Some(page))
                    .await
                    .map(|result| (result.tools, result.next_cursor, result.ttl_ms))
            }),
        ),
        offered(
            capabilities.resources.is_some(),
            paged("resources", budget, |page| async move {
                session
                    .list_resources(Some(page))
                    .await
                    .map(|result| (result.resources, result.next_cursor, result.ttl_ms))
            }),
        ),
        offered(
            capabilities.resources.is_some(),
            paged("resource templates", budget, |page| async move {
                session
                    .list_resource_templates(Some(page))
                    .await
                    .map(|result| (result.resource_templates, result.next_cursor, result.ttl_ms))
            }),
        ),
        offered(
            capabilities.prompts.is_some(),
            paged("prompts", budget, |page| async move {
                session
                    .list_prompts(Some(page))
                    .await
                    .map(|result| (result.prompts, result.next_cursor, result.ttl_ms))
            }),
        ),
    )?;
    // One order whatever order the server lists in, so that what a model
    // is shown (and a prompt cache keyed on it) does not change between
    // discoveries of an unchanged server.
    discovery.tools = sorted_by_name(tools);
    discovery.resources = resources;
    discovery.resource_templates = resource_templates;
    discovery.prompts = prompts;
    discovery.discovered_at = switchboard_db::now_millis();
    discovery.fresh_for = budget.freshness();
    Ok(discovery)
}

/// `tools` ordered by their `name` (stable for equal names).
fn sorted_by_name(mut tools: Vec<Tool>) -> Vec<Tool> {
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn tools_are_ordered_by_name_whatever_the_server_order() {
        let tool = |name: &'static str| Tool::new(name, "", Arc::default());
        let tools = vec![tool("b"), tool("a"), tool("c")];
        let names: Vec<_> = sorted_by_name(tools)
            .into_iter()
            .map(|tool| tool.name)
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn the_shortest_stated_freshness_wins() {
        let budget = Budget::new(DiscoveryLimits {
            max_pages: 1,
            max_items: 1,
            max_bytes: 1,
        });
        assert_eq!(budget.freshness(), None);
        budget.fresh_for(Some(5_000));
        budget.fresh_for(None);
        budget.fresh_for(Some(1_000));
        assert_eq!(budget.freshness(), Some(Duration::from_millis(1_000)));
    }
}
