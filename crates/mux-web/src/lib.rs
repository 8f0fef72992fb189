#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("docs/crate.md")]
#![forbid(unsafe_code)]

mod buffer;
mod config;
mod durable;
mod error;
mod expiry;
mod frontend;
mod history;
mod ownership;
#[cfg(feature = "page")]
pub mod page;
mod registry;
mod router;
mod security;
mod serve;
mod thread;
mod translate;
pub mod types;

pub use config::{DoubleTexting, WebConfig};
pub use error::{ConfigError, ErrorCode, WebError};
pub use registry::AgentFactory;
pub use router::AguiRouter;
pub use security::{
    Authenticator, BearerTokens, LocalAddr, OnePrincipal, Principal, ProbeLimit, Refusal,
    RefusalHook, random_token,
};
pub use serve::{ServeLimits, Server, bind, serve};
