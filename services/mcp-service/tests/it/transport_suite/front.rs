//! A TCP front of a streamable HTTP server, for the transport suite.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use tokio::{net::TcpListener, task::JoinHandle};

/// A TCP front of a streamable HTTP server: counts the connections open
/// through it and can stop accepting (the port then refuses connections)
/// and start again on the same address.
pub struct Front {
    addr: SocketAddr,
    upstream: SocketAddr,
    open: Arc<AtomicUsize>,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

/// Counts a connection open while it lives.
struct OpenGuard(Arc<AtomicUsize>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Front {
    /// A front of `upstream` on a free loopback port.
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("the front binds");
        let front = Self {
            addr: listener.local_addr().expect("an address"),
            upstream,
            open: Arc::default(),
            tasks: Arc::default(),
        };
        front.accept(listener);
        front
    }

    /// Accepts again on the same address after [`Front::stop`].
    pub async fn listen(&self) {
        let listener = TcpListener::bind(self.addr).await.expect("the front binds");
        self.accept(listener);
    }

    fn accept(&self, listener: TcpListener) {
        let (open, tasks, upstream) = (self.open.clone(), self.tasks.clone(), self.upstream);
        let accepting = tokio::spawn({
            let tasks = tasks.clone();
            async move {
                while let Ok((mut client, _)) = listener.accept().await {
                    open.fetch_add(1, Ordering::SeqCst);
                    let guard = OpenGuard(open.clone());
                    let relay = tokio::spawn(async move {
                        let _guard = guard;
                        if let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        }
                    });
                    tasks.lock().expect("the task list").push(relay);
                }
            }
        });
        tasks.lock().expect("the task list").push(accepting);
    }

    /// Closes the listener and every connection: the port refuses.
    pub fn stop(&self) {
        for task in self.tasks.lock().expect("the task list").drain(..) {
            task.abort();
        }
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}
