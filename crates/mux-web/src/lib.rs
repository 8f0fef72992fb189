#![doc = include_str!("docs/crate.md")]
#![forbid(unsafe_code)]

mod buffer;
mod config;
mod error;
mod frontend;
mod history;
mod registry;
mod router;
mod serve;
mod thread;
mod translate;
pub mod types;

pub use config::WebConfig;
pub use error::{ErrorCode, WebError};
pub use registry::AgentFactory;
pub use router::AguiRouter;
pub use serve::{bind, serve};
