//! Decomposition: a planner hands over a [`Plan`] through `finish_plan`; workers run its
//! steps in dependency order, the independent ones in parallel; the results are aggregated.
//!
//! [`Decomposition::run`] is traced as one `invoke_workflow {name}` span (GenAI conventions):
//! the planner's `invoke_agent` run inside a `plan {planner}` span, then every worker's
//! `invoke_agent` run, all under it.

use std::collections::BTreeMap;
use std::time::Duration;

use mux_tool::{Registry, Typed};
use tokio::task::JoinSet;
use tracing::{Instrument, Span};

use crate::plan::{FinishPlan, Plan, PlanError};
use crate::workflow;
use crate::{AgentDefinition, AgentError, AgentHandle, AgentRuntime};

/// Why a decomposition failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecompositionError {
    /// The planner finished without a valid `finish_plan` call.
    #[error("the planner finished without calling finish_plan; it said: {0}")]
    NoPlan(String),
    /// The plan cannot run.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// An agent failed.
    #[error(transparent)]
    Agent(#[from] AgentError),
}

impl DecompositionError {
    /// A short name of the failure, for traces (`error.type`).
    pub fn kind(&self) -> &'static str {
        match self {
            DecompositionError::NoPlan(_) => "no_plan",
            DecompositionError::Plan(_) => "invalid_plan",
            DecompositionError::Agent(_) => "agent",
        }
    }
}

/// How one step went.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepOutcome {
    /// The worker's final text.
    Done(String),
    /// The worker failed.
    Failed(String),
    /// Not run because a step it depends on did not succeed.
    Skipped {
        /// The dependency that did not succeed.
        because: String,
    },
}

/// A step's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepResult {
    /// The step id.
    pub id: String,
    /// The wave it ran in (0-based).
    pub wave: usize,
    /// How it went.
    pub outcome: StepOutcome,
}

/// What a decomposition produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecompositionOutcome {
    /// The plan.
    pub plan: Plan,
    /// The waves of step ids, in order.
    pub waves: Vec<Vec<String>>,
    /// Every step's result, wave by wave, in id order within a wave.
    pub results: Vec<StepResult>,
}

impl DecompositionOutcome {
    /// Whether every step succeeded.
    pub fn succeeded(&self) -> bool {
        self.results
            .iter()
            .all(|r| matches!(r.outcome, StepOutcome::Done(_)))
    }

    /// The results as one text: each step's id, description and output.
    pub fn summary(&self) -> String {
        let mut text = format!("Goal: {}\n", self.plan.goal);
        for result in &self.results {
            let description = self
                .plan
                .step(&result.id)
                .map_or("", |s| s.description.as_str());
            let outcome = match &result.outcome {
                StepOutcome::Done(text) => text.clone(),
                StepOutcome::Failed(err) => format!("FAILED: {err}"),
                StepOutcome::Skipped { because } => format!("SKIPPED (needs {because})"),
            };
            text.push_str(&format!("\n[{}] {description}\n{outcome}\n", result.id));
        }
        text
    }
}

/// A planner and a worker definition. The planner gets the `finish_plan` tool on top of its
/// own; each step runs on a fresh worker agent that sees the goal, its step and the results
/// of the steps it depends on.
#[derive(Clone, Debug)]
pub struct Decomposition {
    planner: AgentDefinition,
    worker: AgentDefinition,
    step_timeout: Duration,
    parent: Option<AgentHandle>,
    name: String,
}

impl Decomposition {
    /// A decomposition with `planner` and `worker` and a 10-minute limit per agent run.
    pub fn new(planner: AgentDefinition, worker: AgentDefinition) -> Self {
        Self {
            planner,
            worker,
            step_timeout: Duration::from_secs(600),
            parent: None,
            name: "decomposition".to_owned(),
        }
    }

    /// Names the decomposition in traces (`invoke_workflow {name}`, `gen_ai.workflow.name`;
    /// default `decomposition`). Keep it low-cardinality: a fixed name, never a task.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The limit on each agent run (planner and every step).
    pub fn step_timeout(mut self, timeout: Duration) -> Self {
        self.step_timeout = timeout;
        self
    }

    /// Runs the planner and the workers as subagents of `parent`: linked to it, using its
    /// tools, and cancelled with it.
    pub fn parent(mut self, parent: &AgentHandle) -> Self {
        self.parent = Some(parent.clone());
        self
    }

    /// Plans `task`, then executes the plan.
    pub async fn run(
        &self,
        runtime: &AgentRuntime,
        task: &str,
    ) -> Result<DecompositionOutcome, DecompositionError> {
        let span = workflow::workflow_span("decomposition", &self.name);
        let result = async {
            let plan = self.plan_under(runtime, task, &span).await?;
            self.execute_under(runtime, plan, &span).await
        }
        .instrument(span.clone())
        .await;
        if let Err(err) = &result {
            workflow::record_error(&span, err.kind());
        }
        result
    }

    /// Asks the planner for a plan of `task`; traced as a `plan {planner}` span under the
    /// current span.
    pub async fn plan(
        &self,
        runtime: &AgentRuntime,
        task: &str,
    ) -> Result<Plan, DecompositionError> {
        self.plan_under(runtime, task, &Span::current()).await
    }

    async fn plan_under(
        &self,
        runtime: &AgentRuntime,
        task: &str,
        parent: &Span,
    ) -> Result<Plan, DecompositionError> {
        let span = workflow::plan_span(parent, &self.planner.name);
        let result = self.plan_in(runtime, task, &span).await;
        if let Err(err) = &result {
            workflow::record_error(&span, err.kind());
        }
        result
    }

    async fn plan_in(
        &self,
        runtime: &AgentRuntime,
        task: &str,
        span: &Span,
    ) -> Result<Plan, DecompositionError> {
        let finish = FinishPlan::new();
        let tools = Registry::new();
        let typed =
            Typed::new(finish.clone()).map_err(|err| AgentError::ToolSetup(err.to_string()))?;
        let _ = tools.replace(std::sync::Arc::new(typed));
        let planner = runtime
            .spawn_under(self.parent.as_ref(), self.planner.clone(), tools)
            .await?;
        let prompt = format!(
            "{task}\n\nBreak this into steps and call `finish_plan` with the goal and the steps \
             (ids, descriptions, and the ids each step depends on)."
        );
        let outcome = async {
            let mut run = planner.prompt_under(prompt, workflow::under(span))?;
            run.wait_timeout(self.step_timeout).await
        }
        .await;
        planner.shutdown();
        planner.wait().await;
        let summary = outcome?;
        finish
            .plan()
            .ok_or(DecompositionError::NoPlan(summary.text))
    }

    /// Runs `plan`'s steps on workers, wave by wave, each wave's steps in parallel. A step
    /// whose dependency did not succeed is skipped. The workers' runs are traced under the
    /// current span.
    pub async fn execute(
        &self,
        runtime: &AgentRuntime,
        plan: Plan,
    ) -> Result<DecompositionOutcome, DecompositionError> {
        self.execute_under(runtime, plan, &Span::current()).await
    }

    async fn execute_under(
        &self,
        runtime: &AgentRuntime,
        plan: Plan,
        span: &Span,
    ) -> Result<DecompositionOutcome, DecompositionError> {
        let waves = plan.waves()?;
        let mut outcomes: BTreeMap<String, StepOutcome> = BTreeMap::new();
        let mut results = Vec::new();
        for (index, wave) in waves.iter().enumerate() {
            let mut running = JoinSet::new();
            for id in wave {
                let Some(step) = plan.step(id) else { continue };
                let blocked = step
                    .depends_on
                    .iter()
                    .find(|d| !matches!(outcomes.get(*d), Some(StepOutcome::Done(_))));
                if let Some(dependency) = blocked {
                    outcomes.insert(
                        id.clone(),
                        StepOutcome::Skipped {
                            because: dependency.clone(),
                        },
                    );
                    continue;
                }
                let mut prompt = format!(
                    "Overall goal: {}\n\nYour step ({}): {}\n",
                    plan.goal, step.id, step.description
                );
                for dependency in &step.depends_on {
                    if let Some(StepOutcome::Done(text)) = outcomes.get(dependency) {
                        prompt.push_str(&format!("\nResult of step {dependency}:\n{text}\n"));
                    }
                }
                let runtime = runtime.clone();
                let worker = self.worker.clone();
                let timeout = self.step_timeout;
                let parent = self.parent.clone();
                let id = id.clone();
                let span = span.clone();
                running.spawn(async move {
                    let outcome =
                        run_worker(&runtime, parent.as_ref(), worker, prompt, timeout, &span).await;
                    (id, outcome)
                });
            }
            while let Some(joined) = running.join_next().await {
                let (id, outcome) = joined.map_err(|err| AgentError::Crashed(err.to_string()))?;
                outcomes.insert(id, outcome);
            }
            for id in wave {
                if let Some(outcome) = outcomes.get(id) {
                    results.push(StepResult {
                        id: id.clone(),
                        wave: index,
                        outcome: outcome.clone(),
                    });
                }
            }
        }
        Ok(DecompositionOutcome {
            plan,
            waves,
            results,
        })
    }
}

async fn run_worker(
    runtime: &AgentRuntime,
    parent: Option<&AgentHandle>,
    worker: AgentDefinition,
    prompt: String,
    timeout: Duration,
    span: &Span,
) -> StepOutcome {
    let agent = match runtime.spawn_under(parent, worker, Registry::new()).await {
        Ok(agent) => agent,
        Err(err) => return StepOutcome::Failed(err.to_string()),
    };
    let outcome = async {
        let mut run = agent.prompt_under(prompt, workflow::under(span))?;
        run.wait_timeout(timeout).await
    }
    .await;
    agent.shutdown();
    agent.wait().await;
    match outcome {
        Ok(summary) => StepOutcome::Done(summary.text),
        Err(err) => StepOutcome::Failed(err.to_string()),
    }
}
