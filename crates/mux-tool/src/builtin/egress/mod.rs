//! The egress proxy of sandboxed commands: an HTTP proxy (absolute-URI requests and
//! `CONNECT`) and a SOCKS5 proxy on one port, inside the agent's process, which lets a
//! command's connection out only to the destinations a [`NetworkPolicy`] allows.
//!
//! For each destination it: applies the deny rules, then the allow rules, then asks the
//! [`DomainAsker`] (none: denied); resolves the name itself and refuses loopback, private,
//! link-local and cloud metadata addresses, whatever form they take
//! ([`classify_egress`](crate::address::classify_egress)); then checks the first bytes of
//! the connection: a TLS ClientHello must name the tunnel's host (SNI), a plain HTTP request
//! must carry it as its `Host`. Only then does it connect. A refusal is a `403` whose reason
//! phrase and body say why ("network access to x:443 denied by …"), or SOCKS5 reply 2.
//!
//! The command reaches the proxy from inside a network namespace of its own, which has only
//! loopback (module `os_sandbox`).

mod ask;
mod forward;
mod gate;
mod head;
mod http;
mod policy;
mod refusal;
mod resolve;
mod rule;
mod serve;
mod sni;
mod socks;
mod tunnel;

pub use ask::{CallDomainAskers, DomainAnswer, DomainAsker, DomainAskers, DomainRequest};
pub use policy::NetworkPolicy;
pub use rule::DomainRuleError;
pub(crate) use serve::Proxy;

/// The port the proxy listens on inside a command's network namespace (which has nothing
/// else), for HTTP and SOCKS5 alike.
pub(crate) const PROXY_PORT: u16 = 3128;

/// The proxy variables a command gets, pointing at [`PROXY_PORT`] on loopback.
pub(crate) fn proxy_env() -> Vec<(&'static str, String)> {
    let http = format!("http://127.0.0.1:{PROXY_PORT}");
    let socks = format!("socks5h://127.0.0.1:{PROXY_PORT}");
    let mut vars = Vec::new();
    for (upper, lower, value) in [
        ("HTTP_PROXY", "http_proxy", &http),
        ("HTTPS_PROXY", "https_proxy", &http),
        ("ALL_PROXY", "all_proxy", &socks),
        ("NO_PROXY", "no_proxy", &String::new()),
    ] {
        vars.push((upper, value.clone()));
        vars.push((lower, value.clone()));
    }
    vars
}
