//! A streamable HTTP MCP server of the initialize era (2025-11-25) written
//! out by hand, HTTP/1.1 over loopback, that writes to the session's
//! standalone GET stream the way real servers do:
//!
//! * [`Script::ElicitOnStandalone`]: `tools/call` sends an elicitation on
//!   the standalone stream and answers the call with what the client
//!   replied; like the TypeScript SDK without an event store, a message for
//!   the standalone stream is dropped when no GET stream is open.
//! * [`Script::AnswerOnNextGet`]: `tools/call` opens an SSE stream, sends a
//!   priming event and closes it; the answer goes to the next GET that
//!   comes while the call is pending (the conformance suite's `sse-retry`).
//!
//! A GET without `Last-Event-ID` (the standalone stream) is looked at only
//! after `standalone_delay` (`None`: never answered), as when it reaches a
//! busy server late.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
    sync::{mpsc, oneshot},
};

/// How the server writes to the session's streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    ElicitOnStandalone,
    AnswerOnNextGet,
}

const SESSION: &str = "scripted-session";
/// The `retry` of the call's stream (milliseconds).
const RETRY_MS: u64 = 1000;

#[derive(Debug, Default)]
struct State {
    standalone: Option<mpsc::UnboundedSender<String>>,
    /// The id of a `tools/call` whose answer waits for a GET.
    pending: Option<Value>,
    elicitation: Option<oneshot::Sender<Value>>,
    /// What the server did, in order.
    log: Vec<String>,
}

/// A running scripted server.
#[derive(Clone)]
pub struct Scripted {
    pub url: String,
    state: Arc<Mutex<State>>,
}

struct Request {
    method: String,
    last_event_id: Option<String>,
    body: Vec<u8>,
}

impl Scripted {
    pub async fn start(script: Script, standalone_delay: Option<Duration>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let url = format!("http://{}/mcp", listener.local_addr().expect("bound"));
        let server = Self {
            url,
            state: Arc::default(),
        };
        let serving = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let server = serving.clone();
                tokio::spawn(async move { server.serve(stream, script, standalone_delay).await });
            }
        });
        server
    }

    /// What the server did, in order.
    pub fn log(&self) -> Vec<String> {
        self.state().log.clone()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("not poisoned")
    }

    fn note(&self, what: impl Into<String>) {
        self.state().log.push(what.into());
    }

    async fn serve(self, mut stream: TcpStream, script: Script, delay: Option<Duration>) {
        let Some(request) = read_request(&mut stream).await else {
            return;
        };
        match request.method.as_str() {
            "GET" => self.get(stream, request.last_event_id, delay).await,
            "POST" => {
                let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
                    return;
                };
                self.post(stream, message, script).await;
            }
            _ => respond(&mut stream, "200 OK", "application/json", "{}").await,
        }
    }

    async fn get(
        &self,
        mut stream: TcpStream,
        last_event_id: Option<String>,
        delay: Option<Duration>,
    ) {
        let resuming = last_event_id.is_some();
        if !resuming {
            match delay {
                Some(delay) => tokio::time::sleep(delay).await,
                None => std::future::pending().await,
            }
        }
        write(&mut stream, &sse_head()).await;
        let (sender, mut messages) = mpsc::unbounded_channel();
        let pending = {
            let mut state = self.state();
            let pending = state.pending.take();
            let kind = if resuming { "resumption" } else { "standalone" };
            match &pending {
                Some(_) => state.log.push(format!("answer on {kind} GET")),
                None => state.log.push(format!("{kind} GET open")),
            }
            if !resuming {
                state.standalone = Some(sender.clone());
            }
            pending
        };
        if let Some(id) = pending {
            let _ = sender.send(event(&answer(&id, "answered on a GET")));
        }
        drop(sender);
        while let Some(message) = messages.recv().await {
            if stream.write_all(message.as_bytes()).await.is_err() {
                return;
            }
        }
    }

    async fn post(&self, mut stream: TcpStream, message: Value, script: Script) {
        let method = message["method"].as_str().unwrap_or_default().to_owned();
        let id = message.get("id").cloned();
        match (method.as_str(), id) {
            ("initialize", Some(id)) => {
                let result = json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted", "version": "1.0.0"}
                });
                let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
                respond_with_session(&mut stream, &body.to_string()).await;
            }
            ("tools/list", Some(id)) => {
                let tool = json!({"name": "ask", "inputSchema": {"type": "object"}});
                let body = json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [tool]}});
                respond_with_session(&mut stream, &body.to_string()).await;
            }
            ("tools/call", Some(id)) => match script {
                Script::ElicitOnStandalone => self.elicit_on_standalone(stream, id).await,
                Script::AnswerOnNextGet => self.answer_on_next_get(stream, id).await,
            },
            ("", Some(_)) => {
                // A response: the client's answer to the elicitation.
                let answer = self.state().elicitation.take();
                if let Some(answer) = answer {
                    let _ = answer.send(message["result"].clone());
                }
                write(&mut stream, ACCEPTED).await;
            }
            (_, None) => write(&mut stream, ACCEPTED).await,
            // `server/discover` and anything else: not a method of this era
            // (what the TypeScript SDK's example servers answer).
            (_, Some(id)) => {
                let body = json!({
                    "jsonrpc": "2.0", "id": id,
                    "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}
                });
                respond(
                    &mut stream,
                    "400 Bad Request",
                    "application/json",
                    &body.to_string(),
                )
                .await;
            }
        }
    }

    async fn elicit_on_standalone(&self, mut stream: TcpStream, id: Value) {
        write(&mut stream, &sse_head()).await;
        let (answer_to, answered) = oneshot::channel();
        let elicitation = json!({
            "jsonrpc": "2.0", "id": "elicit-1", "method": "elicitation/create",
            "params": {
                "message": "who is asking?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "default": "Ada"}}
                }
            }
        });
        {
            let mut state = self.state();
            state.elicitation = Some(answer_to);
            match &state.standalone {
                Some(standalone) if standalone.send(event(&elicitation)).is_ok() => {
                    state.log.push("elicitation sent".into());
                }
                _ => state.log.push("elicitation dropped: no GET stream".into()),
            }
        }
        let text = match answered.await {
            Ok(result) => format!("{} {}", result["action"], result["content"]["name"]),
            Err(_) => "no answer".to_owned(),
        };
        write(&mut stream, &event(&answer(&id, &text))).await;
    }

    async fn answer_on_next_get(&self, mut stream: TcpStream, id: Value) {
        self.state().pending = Some(id);
        self.note("call stream closed");
        let priming = format!("id: call-1\nretry: {RETRY_MS}\ndata: \n\n");
        write(&mut stream, &format!("{}{priming}", sse_head())).await;
    }
}

const ACCEPTED: &str = "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

fn sse_head() -> String {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
         mcp-session-id: {SESSION}\r\nconnection: close\r\n\r\n"
    )
}

fn event(message: &Value) -> String {
    format!("event: message\ndata: {message}\n\n")
}

fn answer(id: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
}

async fn write(stream: &mut TcpStream, text: &str) {
    let _ = stream.write_all(text.as_bytes()).await;
}

async fn respond(stream: &mut TcpStream, status: &str, content_type: &str, body: &str) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n",
        body.len()
    );
    write(stream, &format!("{head}{body}")).await;
}

async fn respond_with_session(stream: &mut TcpStream, body: &str) {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         mcp-session-id: {SESSION}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    write(stream, &format!("{head}{body}")).await;
}

/// One request: its method, `Last-Event-ID` and body.
async fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = stream.read(&mut buf).await.ok().filter(|n| *n > 0)?;
        read.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&read[..head_end]).into_owned();
    let method = head.split(' ').next()?.to_owned();
    let header = |name: &str| {
        head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    let length: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = read[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await.ok().filter(|n| *n > 0)?;
        body.extend_from_slice(&buf[..n]);
    }
    Some(Request {
        method,
        last_event_id: header("last-event-id"),
        body,
    })
}

/// A TCP proxy to the HTTP server at `url` that holds back the answer to
/// every request carrying `server/discover` for `delay`; returns its URL.
pub async fn delaying_discover_proxy(url: &str, delay: Duration) -> String {
    let target = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("a host")
        .to_owned();
    let path = url
        .trim_start_matches("http://")
        .trim_start_matches(&target)
        .to_owned();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let proxy = format!("http://{}{path}", listener.local_addr().expect("bound"));
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let Ok(outbound) = TcpStream::connect(&target).await else {
                continue;
            };
            tokio::spawn(pipe(inbound, outbound, delay));
        }
    });
    proxy
}

async fn pipe(inbound: TcpStream, outbound: TcpStream, delay: Duration) {
    let held = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (mut from_client, mut to_server) = (inbound, outbound);
    let (mut client_read, mut client_write) = from_client.split();
    let (mut server_read, mut server_write) = to_server.split();
    let upstream = async {
        let mut buf = [0u8; 8192];
        while let Ok(n) = client_read.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if buf[..n].windows(15).any(|w| w == b"server/discover") {
                held.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            if server_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    let downstream = async {
        let mut buf = [0u8; 8192];
        while let Ok(n) = server_read.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if held.swap(false, std::sync::atomic::Ordering::SeqCst) {
                tokio::time::sleep(delay).await;
            }
            if client_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    tokio::join!(upstream, downstream);
}
