//! Evals inside `cargo test`: run a dataset (offline, from cassettes or a scripted model)
//! and fail the test with the report's table when a case fails.

use crate::dataset::Dataset;
use crate::report::Report;
use crate::runner::Runner;
use crate::table;

/// Runs `dataset` with `runner`; `Err` carries the report's table when a case fails, or the
/// settings error.
pub async fn check_dataset(runner: &Runner, dataset: &Dataset) -> Result<Report, String> {
    let report = runner.run(dataset).await.map_err(|err| err.to_string())?;
    if report.passed() {
        Ok(report)
    } else {
        Err(table::render(&report))
    }
}

/// Runs `dataset` with `runner` and panics with the report's table when a case fails: the
/// gate of a project's CI on its agent. Returns the report when every case passes.
///
/// ```
/// use mux_eval::{Case, Dataset, Runner, assert_dataset};
/// use mux_llm::testing::ScriptedClient;
/// use mux_orchestrator::Agent;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let model = ScriptedClient::new().respond_with(|_| Ok(mux_llm::Response::from_text("4")));
/// let agent = Agent::builder(model, "m").build()?;
/// let dataset = Dataset::new("sums").case(Case::new("two-and-two", "2+2?").expect_output("4"));
/// assert_dataset(&Runner::new(agent), &dataset).await;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::panic, reason = "failing the test is this helper's job")]
pub async fn assert_dataset(runner: &Runner, dataset: &Dataset) -> Report {
    match check_dataset(runner, dataset).await {
        Ok(report) => report,
        Err(table) => panic!("eval {} failed:\n{table}", dataset.name),
    }
}
