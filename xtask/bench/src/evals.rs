//! Evals: the same dataset (100 cases, an agent on a model that echoes the prompt, no tools,
//! the trivial "equals the expected output" evaluator) run by mux-eval and by pydantic-evals
//! (a pydantic-ai agent on a `FunctionModel`, `EqualsExpected`), at concurrency 1 and 16, in
//! cases per second. pydantic-evals runs in the venv `target/bench-evals-venv`, made on first
//! use from the pinned xtask/bench/python/evals/requirements.txt.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use mux_eval::{Case, Dataset, Runner};
use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Response, Role};
use mux_orchestrator::Agent;

use crate::harness::Row;
use crate::{load, process};

const CASES: usize = 100;
const SAMPLES: usize = 5;

fn dataset() -> Dataset {
    (0..CASES).fold(Dataset::new("bench"), |dataset, i| {
        dataset.case(
            Case::new(format!("case-{i}"), format!("prompt {i}"))
                .expect_output(format!("echo: prompt {i}")),
        )
    })
}

fn echo_agent() -> Result<Agent, String> {
    let model = ScriptedClient::new().respond_with(|request| {
        let prompt: String = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.iter().filter_map(ContentBlock::as_text).collect())
            .unwrap_or_default();
        Ok(Response::from_text(format!("echo: {prompt}")))
    });
    Agent::builder(model, "echo")
        .build()
        .map_err(|e| e.to_string())
}

/// The median seconds of one run of the dataset by mux-eval at `concurrency`.
fn mux_seconds(concurrency: usize) -> Result<f64, String> {
    let rt = load::runtime()?;
    let dataset = dataset();
    let runner = Runner::new(echo_agent()?)
        .concurrency(concurrency)
        .progress(false);
    let mut seconds = Vec::new();
    for sample in 0..=SAMPLES {
        let start = Instant::now();
        let report = rt
            .block_on(runner.run(&dataset))
            .map_err(|e| e.to_string())?;
        let elapsed = start.elapsed().as_secs_f64();
        if !report.passed() {
            return Err(format!("mux-eval: {} cases failed", report.totals().failed));
        }
        if sample > 0 {
            seconds.push(elapsed);
        }
    }
    Ok(median(seconds))
}

/// The median seconds of one run of the dataset by pydantic-evals at `concurrency`.
fn pydantic_seconds(python: &PathBuf, concurrency: usize) -> Result<f64, String> {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/evals/pydantic_evals_bench.py");
    let output = Command::new(python)
        .arg(script)
        .args([
            CASES.to_string(),
            concurrency.to_string(),
            SAMPLES.to_string(),
        ])
        .output()
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!(
            "pydantic-evals failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let line: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("pydantic-evals printed: {e}"))?;
    if line["passed"].as_u64() != Some(CASES as u64) {
        return Err(format!("pydantic-evals: not every case passed: {line}"));
    }
    let seconds: Vec<f64> = line["seconds"]
        .as_array()
        .map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect())
        .unwrap_or_default();
    if seconds.is_empty() {
        return Err(format!("pydantic-evals printed no times: {line}"));
    }
    Ok(median(seconds))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let python = process::venv_python(
        "target/bench-evals-venv",
        "xtask/bench/python/evals/requirements.txt",
        "pydantic-evals",
    )?;
    let mut rows = Vec::new();
    for concurrency in [1, 16] {
        let mux = CASES as f64 / mux_seconds(concurrency)?;
        let pydantic = CASES as f64 / pydantic_seconds(&python, concurrency)?;
        println!(
            "evals c={concurrency}: mux-eval {mux:.0} cases/s; pydantic-evals {pydantic:.0} cases/s"
        );
        rows.push(Row {
            name: format!("evals: {CASES} cases, concurrency {concurrency} (cases/s)"),
            value: mux,
            unit: "1/s",
            baseline: "pydantic-evals 2.62 (FunctionModel)".into(),
            baseline_value: pydantic,
        });
    }
    Ok(rows)
}
