//! The proxy's decision for one destination: the rules, then the asker (once per host and
//! port per command), then the resolution that refuses internal addresses, then the
//! connection.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::net::TcpStream;

use super::ask::DomainRequest;
use super::policy::{NetworkPolicy, RuleVerdict};
use super::refusal::Refusal;
use super::resolve::{refuse_internal, resolve};
use super::rule::Host;

/// How long a connection to a destination may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The decisions of one command's proxy.
#[derive(Debug)]
pub(crate) struct Gate {
    policy: NetworkPolicy,
    /// The asker's answers, for the rest of the command.
    answers: Mutex<HashMap<(Host, u16), bool>>,
    /// Held while asking, so concurrent connections to one host wait for one answer.
    asking: tokio::sync::Mutex<()>,
}

impl Gate {
    pub(crate) fn new(policy: NetworkPolicy) -> Self {
        Self {
            policy,
            answers: Mutex::new(HashMap::new()),
            asking: tokio::sync::Mutex::new(()),
        }
    }

    /// Decides `host:port` and opens a connection to it.
    pub(crate) async fn connect(&self, host: &Host, port: u16) -> Result<TcpStream, Refusal> {
        let addrs = self.admit(host, port).await?;
        let mut last = String::from("no address");
        for addr in addrs {
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
                Ok(Ok(stream)) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(stream);
                }
                Ok(Err(err)) => last = format!("{addr}: {err}"),
                Err(_) => last = format!("{addr}: timed out"),
            }
        }
        Err(Refusal::unreachable(host, port, last))
    }

    /// The addresses `host:port` may be reached at, once the rules (or the asker) allow it.
    pub(crate) async fn admit(&self, host: &Host, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
        // An internal address is refused whatever the rules say; say so first.
        refuse_internal(&self.policy, host, port)?;
        match self.policy.verdict(host, port) {
            RuleVerdict::Denied(rule) => return Err(Refusal::rule(host, port, &rule)),
            RuleVerdict::Allowed => {}
            RuleVerdict::Unknown => self.ask(host, port).await?,
        }
        resolve(&self.policy, host, port).await
    }

    async fn ask(&self, host: &Host, port: u16) -> Result<(), Refusal> {
        let Some(asker) = &self.policy.asker else {
            return Err(Refusal::no_rule(host, port));
        };
        let key = (host.clone(), port);
        let _asking = self.asking.lock().await;
        let known = self.answers.lock().ok().and_then(|a| a.get(&key).copied());
        let allowed = match known {
            Some(allowed) => allowed,
            None => {
                let request = DomainRequest {
                    host: host.to_string(),
                    port,
                };
                let allowed = asker.ask(request).await.allows();
                if let Ok(mut answers) = self.answers.lock() {
                    answers.insert(key, allowed);
                }
                allowed
            }
        };
        if allowed {
            Ok(())
        } else {
            Err(Refusal::asked(host, port))
        }
    }
}
