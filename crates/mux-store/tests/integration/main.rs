//! The integration tests of the stores, one module per area, linked into one test binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[cfg(feature = "postgres")]
mod doc_urls;
mod file_runs_on_a_full_disk;
#[cfg(feature = "postgres")]
mod group_commit;
#[cfg(feature = "postgres")]
mod lost_answers;
mod run_events_in_batches;
mod run_listing;
mod run_owners;
mod runs;
mod store_urls;

/// A two-worker runtime for tests that start servers or processes of their own.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
