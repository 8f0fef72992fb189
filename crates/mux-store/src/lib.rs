//! Where mux keeps its conversations and its runs: a [`session::SessionStore`] for each
//! session's metadata and message log, a [`runs::RunStore`] for the runs that execute on those
//! sessions (their owner and lease, their events, a paused approval), in memory, in files, in
//! one SQLite file (feature `sqlite`) or in PostgreSQL (feature `postgres`).
//!
//! The think-act loop (mux-orchestrator) and the faces take these stores; this crate knows
//! nothing of them: it uses only mux-llm's `Message` and mux-tool's `BoxFuture`.
#![forbid(unsafe_code)]

#[cfg(feature = "postgres")]
mod group_commit;
#[cfg(feature = "postgres")]
mod pg_connections;
#[cfg(feature = "postgres")]
mod pg_pool;
pub mod runs;
pub mod session;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod store_bound;
