//! Decomposition: a planner's `finish_plan`, dependency order, parallel waves, cycles and
//! unknown dependencies, aggregated results.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::tool_call;
use mux_agents::{
    AgentDefinition, AgentRuntime, Decomposition, DecompositionError, Plan, PlanError, PlanStep,
    StepOutcome, presets,
};
use mux_llm::testing::ScriptedClient;
use mux_llm::{LlmError, Request, Response};
use mux_orchestrator::Agent;
use serde_json::{Value, json};

fn step(id: &str, deps: &[&str]) -> PlanStep {
    PlanStep {
        id: id.into(),
        description: format!("do {id}"),
        depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
    }
}

fn plan(steps: Vec<PlanStep>) -> Plan {
    Plan {
        goal: "ship it".into(),
        steps,
    }
}

fn text(text: &str) -> Response {
    Response::from_text(text)
}

/// A model that plans with `plan` when it has `finish_plan`, and otherwise works on the step
/// named in its prompt ("Your step (X)"), failing step `fail`. Records each worker prompt.
fn model(plan: Value, fail: &'static str, prompts: Arc<Mutex<Vec<String>>>) -> ScriptedClient {
    ScriptedClient::new().respond_with(move |request: &Request| {
        let last = request
            .messages
            .last()
            .map(|m| m.text())
            .unwrap_or_default();
        let planner = request
            .tools
            .iter()
            .any(|t| t.name.as_str() == "finish_plan");
        if planner {
            return Ok(if request.messages.len() == 1 {
                tool_call("p1", "finish_plan", plan.clone())
            } else {
                text("planned")
            });
        }
        prompts.lock().unwrap().push(last.clone());
        let id = last
            .split("Your step (")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .unwrap_or("?")
            .to_owned();
        if id == fail {
            return Err(LlmError::new(
                "scripted",
                mux_llm::LlmFailure::InvalidRequest {
                    status: 400,
                    message: format!("step {id} broke"),
                },
            ));
        }
        Ok(text(&format!("done {id}")))
    })
}

#[test]
fn waves_follow_dependencies_and_bad_plans_are_named() {
    let diamond = plan(vec![
        step("d", &["b", "c"]),
        step("c", &["a"]),
        step("b", &["a"]),
        step("a", &[]),
    ]);
    assert_eq!(
        diamond.waves().unwrap(),
        vec![vec!["a"], vec!["b", "c"], vec!["d"]]
    );

    let cycle = plan(vec![
        step("a", &[]),
        step("b", &["c"]),
        step("c", &["d"]),
        step("d", &["b"]),
    ]);
    let err = cycle.waves().unwrap_err();
    assert_eq!(
        err,
        PlanError::Cycle(vec!["b".into(), "c".into(), "d".into(), "b".into()])
    );
    assert_eq!(
        err.to_string(),
        "steps depend on each other in a cycle: b -> c -> d -> b"
    );

    let own = plan(vec![step("a", &["a"])]);
    assert_eq!(
        own.waves().unwrap_err(),
        PlanError::Cycle(vec!["a".into(), "a".into()])
    );

    let unknown = plan(vec![step("a", &[]), step("b", &["zz"])]);
    assert_eq!(
        unknown.waves().unwrap_err().to_string(),
        "step `b` depends on unknown step `zz`"
    );
    assert_eq!(
        plan(vec![step("a", &[]), step("a", &[])])
            .waves()
            .unwrap_err(),
        PlanError::DuplicateStep("a".into())
    );
    assert_eq!(plan(vec![]).waves().unwrap_err(), PlanError::Empty);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_task_runs_in_dependency_order_and_aggregates_results() {
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let the_plan = json!({
        "goal": "ship it",
        "steps": [
            {"id": "d", "description": "release", "depends_on": ["b", "c"]},
            {"id": "b", "description": "code", "depends_on": ["a"]},
            {"id": "c", "description": "docs", "depends_on": ["a"]},
            {"id": "a", "description": "design"},
        ]
    });
    let client = model(the_plan, "", prompts.clone());
    let runtime = AgentRuntime::builder(Agent::builder(client, "m").build().unwrap()).build();
    let root = std::path::Path::new("/project");
    let decomposition = Decomposition::new(presets::architect(root), presets::coder_in(root))
        .step_timeout(Duration::from_secs(10));
    let outcome = decomposition.run(&runtime, "Ship version 2").await.unwrap();

    assert_eq!(outcome.plan.goal, "ship it");
    assert_eq!(outcome.waves, vec![vec!["a"], vec!["b", "c"], vec!["d"]]);
    let order: Vec<_> = outcome
        .results
        .iter()
        .map(|r| (r.id.as_str(), r.wave))
        .collect();
    assert_eq!(order, vec![("a", 0), ("b", 1), ("c", 1), ("d", 2)]);
    assert!(outcome.succeeded());
    assert_eq!(
        outcome.results[3].outcome,
        StepOutcome::Done("done d".into())
    );

    let prompts = prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 4);
    assert!(prompts[0].contains("Your step (a): design"));
    let release = prompts
        .iter()
        .find(|p| p.contains("Your step (d)"))
        .unwrap();
    assert!(
        release.contains("Result of step b:\ndone b")
            && release.contains("Result of step c:\ndone c"),
        "{release}"
    );
    let summary = outcome.summary();
    assert!(summary.starts_with("Goal: ship it\n"));
    assert!(summary.contains("[c] docs\ndone c"));
    assert_eq!(runtime.count(), 0, "planner and workers are shut down");
}

#[tokio::test]
async fn a_failed_step_skips_its_dependents_only() {
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let client = model(Value::Null, "b", prompts.clone());
    let runtime = AgentRuntime::builder(Agent::builder(client, "m").build().unwrap()).build();
    let decomposition = Decomposition::new(presets::planner(), AgentDefinition::new("worker"));
    let outcome = decomposition
        .execute(
            &runtime,
            plan(vec![
                step("a", &[]),
                step("b", &["a"]),
                step("c", &["a"]),
                step("d", &["b"]),
            ]),
        )
        .await
        .unwrap();
    assert!(!outcome.succeeded());
    let by_id = |id: &str| {
        outcome
            .results
            .iter()
            .find(|r| r.id == id)
            .unwrap()
            .outcome
            .clone()
    };
    assert_eq!(by_id("c"), StepOutcome::Done("done c".into()));
    assert!(matches!(by_id("b"), StepOutcome::Failed(err) if err.contains("step b broke")));
    assert_eq!(
        by_id("d"),
        StepOutcome::Skipped {
            because: "b".into()
        }
    );
    assert_eq!(prompts.lock().unwrap().len(), 3, "d never ran");
}

#[tokio::test]
async fn a_cyclic_plan_is_refused_to_the_planner_and_reported() {
    let cyclic = json!({
        "goal": "g",
        "steps": [
            {"id": "a", "description": "x", "depends_on": ["b"]},
            {"id": "b", "description": "y", "depends_on": ["a"]},
        ]
    });
    let client = model(cyclic, "", Arc::new(Mutex::new(Vec::new())));
    let runtime =
        AgentRuntime::builder(Agent::builder(client.clone(), "m").build().unwrap()).build();
    let decomposition = Decomposition::new(presets::planner(), AgentDefinition::new("worker"));
    let err = decomposition.run(&runtime, "task").await.unwrap_err();
    assert!(
        matches!(&err, DecompositionError::NoPlan(said) if said == "planned"),
        "{err}"
    );
    // The planner read why its plan was refused.
    let refusal = format!("{:?}", client.requests()[1].messages.last().unwrap());
    assert!(
        refusal.contains("steps depend on each other in a cycle: a -> b -> a"),
        "{refusal}"
    );

    let err = decomposition
        .execute(&runtime, plan(vec![step("a", &["nope"])]))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "step `a` depends on unknown step `nope`");
}
