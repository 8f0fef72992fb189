//! Test support, also used by the crates above: a scripted client and a local HTTP server
//! that replays recorded provider responses, so tests run real provider code over a socket.

mod replay;
mod scripted;

pub use replay::{RecordedRequest, ReplayServer, Reply};
pub use scripted::{Script, ScriptedClient, events_of};
