//! The database the doctests run against: docs blocks that need PostgreSQL read
//! [`DATABASE_URL`] as an app would, and `cargo xtask test` sets it to a fresh database on a
//! throw-away server (or on `MUX_TEST_DATABASE_URL`'s server), made by the testkit.

use mux_testkit::postgres::TestDatabase;

/// The variable the docs' PostgreSQL blocks read their URL from.
pub(crate) const DATABASE_URL: &str = "DATABASE_URL";

/// Starts a server (or uses `MUX_TEST_DATABASE_URL`'s) and makes a fresh database on it,
/// which goes (with a throw-away server) when the value is dropped; says why not when it
/// cannot.
pub(crate) fn start() -> Result<TestDatabase, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("a runtime for the doctests' database: {err}"))?;
    // The testkit reports a server it cannot start by panicking with the reason (printed
    // above by the panic hook).
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(TestDatabase::new())
    }))
    .map_err(|_| {
        format!(
            "no PostgreSQL for the doctests (the reason is above); the docs blocks that need \
             a database read {DATABASE_URL}"
        )
    })
}
