//! A local HTTP site for tests of the network wall: what a walled `curl` reaches through the
//! proxy, and whether the machine can build the wall at all.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// A local HTTP server on 127.0.0.1 answering `hello from <host>` (the request's `Host`,
/// without its port) to every request; it records the request line of each. Aborted on drop.
pub struct Site {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Site {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Site {
    /// Starts the site on a free port (inside a Tokio runtime).
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding the test site");
        let port = listener.local_addr().expect("the site's address").port();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let log = Arc::clone(&seen);
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let host = head
                        .lines()
                        .find_map(|l| {
                            let (name, value) = l.split_once(':')?;
                            name.eq_ignore_ascii_case("host").then(|| value.trim())
                        })
                        .and_then(|h| h.split(':').next())
                        .unwrap_or("-")
                        .to_ascii_lowercase();
                    log.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(head.lines().next().unwrap_or_default().to_owned());
                    let body = format!("hello from {host}\n");
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        Self { port, seen, task }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// How many requests it has answered.
    pub fn requests(&self) -> usize {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

/// Whether this machine lets an unprivileged process make user and network namespaces (the
/// wall around `bash` needs them). `None` when it cannot tell (no `unshare`): a test then runs.
pub fn namespaces() -> Option<bool> {
    std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--net", "true"])
        .stderr(std::process::Stdio::null())
        .status()
        .ok()
        .map(|s| s.success())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::Site;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    #[tokio::test]
    async fn it_answers_with_the_host_it_was_asked_for_and_counts() {
        let site = Site::start().await;
        assert_eq!(site.requests(), 0);
        let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", site.port()))
            .await
            .unwrap();
        socket
            .write_all(b"GET /hello HTTP/1.1\r\nHOST: Pkgs.Test:8080\r\n\r\n")
            .await
            .unwrap();
        let mut reply = String::new();
        socket.read_to_string(&mut reply).await.unwrap();
        assert!(reply.ends_with("\r\n\r\nhello from pkgs.test\n"), "{reply}");
        assert_eq!(site.requests(), 1);
    }
}
