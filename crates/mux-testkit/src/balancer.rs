//! A real load balancer in front of test servers: Debian's HAProxy, round-robin per request,
//! started from a config in a temp dir and stopped on drop.
//!
//! Each HTTP request (not each connection) goes to the next backend, so a client's requests on
//! one keep-alive connection still spread over every server. A backend that stops answering
//! is taken out after one failed TCP health check (every 200 ms; a TCP check, not an HTTP
//! one, so the servers' probe limits never see the checks), and a request whose connection
//! it refused is sent to another one, as a deployment would have it. Streams (SSE) are let
//! open for an hour.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long HAProxy gets to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running HAProxy balancing HTTP over some backends; killed on drop.
pub struct Balancer {
    child: Child,
    address: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Balancer {
    /// Starts HAProxy on a free loopback port, round-robin over `backends` (HTTP servers on
    /// loopback), or says why not (no `haproxy`: install it, as `.ci/run` does).
    pub fn round_robin(backends: &[SocketAddr]) -> Result<Balancer, String> {
        let binary = find_haproxy().ok_or(
            "haproxy was not found on PATH or in /usr/sbin: install it (`apt-get install -y haproxy`, as .ci/run does)",
        )?;
        let port = free_port()?;
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let dir = tempfile::Builder::new()
            .prefix("mux-haproxy-")
            .tempdir()
            .map_err(|e| format!("creating HAProxy's temp dir: {e}"))?;
        let config = dir.path().join("haproxy.cfg");
        std::fs::write(&config, config_text(address, backends))
            .map_err(|e| format!("writing {}: {e}", config.display()))?;
        let log = std::fs::File::create(dir.path().join("haproxy.log"))
            .map_err(|e| format!("creating HAProxy's log: {e}"))?;
        let child = Command::new(binary)
            .arg("-db")
            .arg("-f")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting haproxy: {e}"))?;
        let mut balancer = Balancer {
            child,
            address,
            _dir: dir,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                return Ok(balancer);
            }
            if let Ok(Some(status)) = balancer.child.try_wait() {
                return Err(format!(
                    "haproxy exited with {status} before listening: {}",
                    balancer.log()
                ));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "haproxy did not listen on {address} within {START_TIMEOUT:?}: {}",
                    balancer.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Where clients connect: `127.0.0.1:PORT`.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// What HAProxy wrote to stderr so far (for a failing test's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("haproxy.log")).unwrap_or_default()
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// HAProxy's configuration: HTTP mode, per-request round-robin, TCP health checks every 200 ms,
/// redispatch on a refused connection, hour-long stream timeouts.
fn config_text(address: SocketAddr, backends: &[SocketAddr]) -> String {
    let mut text = format!(
        "global\n\
         defaults\n\
         \tmode http\n\
         \ttimeout connect 2s\n\
         \ttimeout client 1h\n\
         \ttimeout server 1h\n\
         \ttimeout tunnel 1h\n\
         \toption redispatch\n\
         \tretries 3\n\
         \tretry-on conn-failure\n\
         frontend mux\n\
         \tbind {address}\n\
         \tdefault_backend servers\n\
         backend servers\n\
         \tbalance roundrobin\n"
    );
    for (n, backend) in backends.iter().enumerate() {
        text.push_str(&format!(
            "\tserver s{n} {backend} check inter 200ms fall 1 rise 1\n"
        ));
    }
    text
}

/// A loopback port that was free a moment ago.
fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind(("127.0.0.1", 0)).map_err(|e| format!("finding a free port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("finding a free port: {e}"))
}

fn find_haproxy() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join("haproxy"))
        .find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_names_every_backend_with_a_health_check() {
        let lb = SocketAddr::from(([127, 0, 0, 1], 9000));
        let a = SocketAddr::from(([127, 0, 0, 1], 9001));
        let b = SocketAddr::from(([127, 0, 0, 1], 9002));
        let text = config_text(lb, &[a, b]);
        assert!(text.contains("bind 127.0.0.1:9000"));
        assert!(text.contains("server s0 127.0.0.1:9001 check"));
        assert!(text.contains("server s1 127.0.0.1:9002 check"));
        assert!(text.contains("balance roundrobin"));
    }
}
