//! A request's SSE response that carries nothing but its answer, handed to
//! the MCP client as the plain JSON answer it amounts to.
//!
//! Servers commonly answer every POST with an SSE stream holding a priming
//! event and then the result. The MCP client reads such a stream in a task of
//! its own and forwards each message through two channels; a JSON answer it
//! hands on directly. When the first message of the stream is the answer to
//! the request, nothing else can follow it on that stream (the server closes
//! it), so the answer is returned as JSON. Anything else (a server request,
//! a notification, an event of another kind, an error, the stream ending
//! first) returns the stream as it came, the events already read first, so
//! the client sees every event exactly as before (including the event ids
//! it resumes from).

use std::time::Duration;

use futures::{FutureExt as _, StreamExt as _, stream};
use rmcp::{
    model::{RequestId, ServerJsonRpcMessage},
    transport::streamable_http_client::StreamableHttpPostResponse,
};
use sse_stream::{Error as SseError, Sse};

type Events = stream::BoxStream<'static, Result<Sse, SseError>>;

/// Most events without a message (priming events) read before giving up and
/// handing the stream on as it is.
const MAX_EVENTS_BEFORE_ANSWER: usize = 8;

/// How long the rest of a stream whose answer was taken is read, so that its
/// connection can be used again (as the MCP client does).
const DRAIN_FOR: Duration = Duration::from_millis(50);

/// `events` (the response to request `id`), as JSON when their first message
/// is the answer to `id`, else as the same events.
pub async fn answer_or_stream(
    mut events: Events,
    session: Option<String>,
    id: &RequestId,
) -> StreamableHttpPostResponse {
    let mut read = Vec::new();
    while read.len() < MAX_EVENTS_BEFORE_ANSWER {
        let Some(event) = events.next().await else {
            break;
        };
        let message = match &event {
            Ok(sse) if is_message(sse) => sse.data.as_deref().filter(|d| !d.trim().is_empty()),
            _ => {
                read.push(event);
                break;
            }
        };
        let Some(data) = message else {
            read.push(event);
            continue;
        };
        match serde_json::from_str::<ServerJsonRpcMessage>(data) {
            Ok(answer) if answers(&answer, id) => {
                drain(events);
                return StreamableHttpPostResponse::Json(answer, session);
            }
            _ => {
                read.push(event);
                break;
            }
        }
    }
    StreamableHttpPostResponse::Sse(stream::iter(read).chain(events).boxed(), session)
}

/// Whether the MCP client would read `sse` as a JSON-RPC message.
fn is_message(sse: &Sse) -> bool {
    matches!(sse.event.as_deref(), None | Some("") | Some("message"))
}

fn answers(message: &ServerJsonRpcMessage, id: &RequestId) -> bool {
    match message {
        ServerJsonRpcMessage::Response(response) => &response.id == id,
        ServerJsonRpcMessage::Error(error) => error.id.as_ref() == Some(id),
        _ => false,
    }
}

/// Reads what is left of `events` (normally only its end, often already
/// here), so that the HTTP/1.1 connection goes back to the pool.
fn drain(mut events: Events) {
    match events.next().now_or_never() {
        Some(None) => {}
        _ => {
            tokio::spawn(async move {
                let _ = tokio::time::timeout(DRAIN_FOR, async {
                    while events.next().await.is_some() {}
                })
                .await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    fn event(data: &str) -> Result<Sse, SseError> {
        Ok(Sse {
            data: Some(data.to_owned()),
            ..Sse::default()
        })
    }

    fn priming() -> Result<Sse, SseError> {
        Ok(Sse {
            id: Some("0".into()),
            data: Some(String::new()),
            retry: Some(3000),
            ..Sse::default()
        })
    }

    async fn answer(events: Vec<Result<Sse, SseError>>) -> StreamableHttpPostResponse {
        let id = NumberOrString::Number(7);
        answer_or_stream(stream::iter(events).boxed(), Some("s".into()), &id).await
    }

    async fn data_of(response: StreamableHttpPostResponse) -> Vec<Option<String>> {
        let StreamableHttpPostResponse::Sse(events, _) = response else {
            panic!("expected the stream back");
        };
        events
            .map(|event| event.expect("no error in these streams").data)
            .collect()
            .await
    }

    const RESULT: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;

    #[tokio::test]
    async fn a_stream_holding_only_the_answer_is_the_answer() {
        let response = answer(vec![priming(), event(RESULT)]).await;
        let StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Response(result), session) =
            response
        else {
            panic!("expected the answer as JSON, got {response:?}");
        };
        assert_eq!(result.id, NumberOrString::Number(7));
        assert_eq!(session.as_deref(), Some("s"));
    }

    #[tokio::test]
    async fn anything_before_the_answer_keeps_the_stream_with_every_event() {
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;
        let other = r#"{"jsonrpc":"2.0","id":8,"result":{}}"#;
        for first in [progress, other, "not json"] {
            let data = data_of(answer(vec![priming(), event(first), event(RESULT)]).await).await;
            assert_eq!(
                data,
                [Some(String::new()), Some(first.into()), Some(RESULT.into())]
            );
        }
        let named = Ok(Sse {
            event: Some("endpoint".into()),
            data: Some(RESULT.into()),
            ..Sse::default()
        });
        assert_eq!(
            data_of(answer(vec![named, event(RESULT)]).await)
                .await
                .len(),
            2
        );
    }

    #[tokio::test]
    async fn a_stream_ending_or_priming_without_end_is_handed_on() {
        assert_eq!(data_of(answer(vec![priming()]).await).await.len(), 1);
        let many = (0..=MAX_EVENTS_BEFORE_ANSWER)
            .map(|_| priming())
            .chain([event(RESULT)])
            .collect();
        assert_eq!(
            data_of(answer(many).await).await.len(),
            MAX_EVENTS_BEFORE_ANSWER + 2
        );
    }
}
