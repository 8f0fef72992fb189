//! Where mux keeps its conversations and its runs: a [`session::SessionStore`] for each
//! session's metadata and message log, a [`runs::RunStore`] for the runs that execute on those
//! sessions (their owner and lease, their events, a paused approval), in memory, in files, in
//! one SQLite file (feature `sqlite`) or in PostgreSQL (feature `postgres`).
//!
//! One value opens both: [`Store::open`] of `memory:`, `file://DIR`, `sqlite://PATH` or
//! `postgres://…` gives the sessions and the runs of one place together, so a durable session
//! store cannot be configured beside a run store that forgets (a paused approval is a run).
//!
//! The think-act loop (mux-orchestrator) and the faces take these stores; this crate knows
//! nothing of them: it uses only mux-llm's `Message` and mux-tool's `BoxFuture`.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]

mod event_json;
mod fault;
#[cfg(feature = "postgres")]
mod group_commit;
mod open;
mod open_error;
#[cfg(feature = "postgres")]
mod pg_connections;
#[cfg(feature = "postgres")]
mod pg_pool;
mod run_status;
pub mod runs;
pub mod session;
#[cfg(feature = "sqlite")]
mod sqlite_pool;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod store_bound;
mod url;

pub use open::{FILE_RUNS_DIR, Store};
pub use open_error::OpenError;
pub use url::{StoreUrl, redact};
