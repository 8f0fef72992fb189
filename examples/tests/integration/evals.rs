//! The examples' evals: the coding agent passes its dataset offline, and a seeded regression
//! (a permission rule that lets `write_file` run unasked) is caught by comparing the reports.

use mux::eval::{Change, Comparison};
use mux_examples::evals::{Workspaces, dataset, runner, runner_with};

#[tokio::test]
async fn the_coding_agent_passes_its_evals_and_a_seeded_regression_is_caught() {
    let dataset = dataset().unwrap();
    assert!(dataset.cases.len() >= 20, "{} cases", dataset.cases.len());
    let workspaces = Workspaces::new().unwrap();
    let baseline = runner(workspaces.dir())
        .progress(false)
        .run(&dataset)
        .await
        .unwrap();
    assert!(baseline.passed(), "{}", mux::eval::table::render(&baseline));

    let elsewhere = Workspaces::new().unwrap();
    let candidate = runner_with(elsewhere.dir(), |builder, root| {
        Ok(builder.permissions(mux_examples::allowing(root, &["write_file"])?))
    })
    .progress(false)
    .run(&dataset)
    .await
    .unwrap();
    let comparison = Comparison::of(&baseline, &candidate, 0.01);
    let regressions: Vec<&str> = comparison
        .with(Change::Regression)
        .map(|c| c.name.as_str())
        .collect();
    // Writes no longer ask; and, found by these evals, with a permission policy set a read
    // outside the root asks where it was refused at once.
    assert_eq!(
        regressions,
        ["write-allowed", "write-denied", "outside-the-root"],
        "{}",
        comparison.render()
    );
    assert_eq!(
        comparison.with(Change::Unchanged).count(),
        dataset.cases.len() - 3
    );
    let page = mux::eval::html::render(&candidate);
    let failed = page.find("write-denied").unwrap();
    assert!(failed < page.find("read-readme").unwrap(), "failures first");
}
