//! A response body that holds something (a concurrency slot) until the
//! response has really ended.
//!
//! A handler of a streaming call returns as soon as its stream is built; the
//! work of the call goes on while the body is sent. Whatever counts a call in
//! flight must therefore live as long as the body: it is let go when the body
//! ends (its trailers, its end or an error) or is dropped (the client reset
//! the stream or went away), whichever comes first.

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use http_body::{Body, Frame};

pin_project_lite::pin_project! {
    /// `inner`, holding `held` until it ends or is dropped.
    pub struct HeldBody<B, H> {
        #[pin]
        inner: B,
        held: Option<H>,
    }
}

impl<B, H> HeldBody<B, H> {
    /// `inner`, holding `held`.
    pub fn new(inner: B, held: H) -> Self {
        Self {
            inner,
            held: Some(held),
        }
    }
}

impl<B: Body, H> Body for HeldBody<B, H> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        let ended = match &polled {
            // gRPC trailers are a response's last frame.
            Poll::Ready(Some(Ok(frame))) => frame.is_trailers(),
            Poll::Ready(Some(Err(_)) | None) => true,
            Poll::Pending => false,
        };
        if ended {
            this.held.take();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use bytes::Bytes;
    use http_body::Frame;

    use super::*;

    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    type Polled = Result<Frame<Bytes>, std::convert::Infallible>;
    type TestBody = http_body_util::StreamBody<futures::stream::Iter<std::vec::IntoIter<Polled>>>;

    /// A body of one data frame and trailers, polled by hand.
    fn body() -> TestBody {
        let frames = vec![
            Ok(Frame::data(Bytes::from_static(b"event"))),
            Ok(Frame::trailers(http::HeaderMap::new())),
        ];
        http_body_util::StreamBody::new(futures::stream::iter(frames))
    }

    #[tokio::test]
    async fn the_slot_is_held_until_the_trailers_and_not_after() {
        use http_body_util::BodyExt as _;
        let released = Arc::new(AtomicUsize::new(0));
        let mut held = HeldBody::new(body(), Counted(released.clone()));
        let first = held.frame().await.expect("a frame").expect("data");
        assert!(first.is_data());
        assert_eq!(released.load(Ordering::SeqCst), 0, "held while streaming");
        let last = held.frame().await.expect("a frame").expect("trailers");
        assert!(last.is_trailers());
        assert_eq!(released.load(Ordering::SeqCst), 1, "let go at the end");
        drop(held);
        assert_eq!(released.load(Ordering::SeqCst), 1, "let go once");
    }

    #[test]
    fn a_dropped_body_lets_go_of_its_slot() {
        let released = Arc::new(AtomicUsize::new(0));
        let held = HeldBody::new(body(), Counted(released.clone()));
        drop(held);
        assert_eq!(released.load(Ordering::SeqCst), 1);
    }
}
