//! Test support, also used by the crates above: a scripted client, a local HTTP server that
//! replays recorded provider responses, so tests run real provider code over a real socket,
//! and cassettes that record real provider traffic once and replay it offline.

mod cassette;
mod cassette_server;
mod replay;
mod scripted;

pub use cassette::{
    Cassette, CassetteError, CassetteRequest, CassetteResponse, Interaction, diff_lines, normalize,
};
pub use cassette_server::{CassetteMode, CassetteServer};
pub use replay::{RecordedRequest, ReplayServer, Reply};
pub use scripted::{Script, ScriptedClient, events_of};
