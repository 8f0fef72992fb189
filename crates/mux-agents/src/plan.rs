//! A typed plan (a goal and steps with dependencies), its validation, and the `finish_plan`
//! tool a planner calls to hand it over.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use mux_tool::{ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `finish_plan` tool's name.
pub const FINISH_PLAN: &str = "finish_plan";

/// A plan: what to achieve, and the steps to get there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// What the plan achieves.
    pub goal: String,
    /// The steps, in any order; `depends_on` fixes the order.
    pub steps: Vec<PlanStep>,
}

/// One step of a [`Plan`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanStep {
    /// A short unique id (`s1`, `tests`).
    pub id: String,
    /// What to do, with every detail a worker needs.
    pub description: String,
    /// Ids of the steps that must finish first.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

/// Why a plan cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The plan has no steps.
    #[error("the plan has no steps")]
    Empty,
    /// Two steps share an id.
    #[error("two steps have the id `{0}`")]
    DuplicateStep(String),
    /// A step depends on a step that does not exist.
    #[error("step `{step}` depends on unknown step `{dependency}`")]
    UnknownDependency {
        /// The step.
        step: String,
        /// The missing dependency.
        dependency: String,
    },
    /// Steps depend on each other in a cycle.
    #[error("steps depend on each other in a cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
}

impl Plan {
    /// The steps in waves: every step of a wave depends only on steps of earlier waves, so a
    /// wave's steps can run in parallel. Fails on an empty plan, a duplicate id, an unknown
    /// dependency or a cycle.
    ///
    /// ```
    /// use mux_agents::{Plan, PlanStep, PlanError};
    ///
    /// let step = |id: &str, deps: &[&str]| PlanStep {
    ///     id: id.into(),
    ///     description: id.into(),
    ///     depends_on: deps.iter().map(|d| d.to_string()).collect(),
    /// };
    /// let plan = Plan { goal: "g".into(), steps: vec![step("b", &["a"]), step("a", &[]), step("c", &["a"])] };
    /// assert_eq!(plan.waves()?, vec![vec!["a"], vec!["b", "c"]]);
    ///
    /// let cyclic = Plan { goal: "g".into(), steps: vec![step("a", &["b"]), step("b", &["a"])] };
    /// assert!(matches!(cyclic.waves(), Err(PlanError::Cycle(_))));
    /// # Ok::<(), PlanError>(())
    /// ```
    pub fn waves(&self) -> Result<Vec<Vec<String>>, PlanError> {
        if self.steps.is_empty() {
            return Err(PlanError::Empty);
        }
        let mut deps: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for step in &self.steps {
            let set = step.depends_on.iter().map(String::as_str).collect();
            if deps.insert(step.id.as_str(), set).is_some() {
                return Err(PlanError::DuplicateStep(step.id.clone()));
            }
        }
        for step in &self.steps {
            if let Some(missing) = step
                .depends_on
                .iter()
                .find(|d| !deps.contains_key(d.as_str()))
            {
                return Err(PlanError::UnknownDependency {
                    step: step.id.clone(),
                    dependency: missing.clone(),
                });
            }
        }
        let mut done: BTreeSet<&str> = BTreeSet::new();
        let mut waves = Vec::new();
        while done.len() < deps.len() {
            let wave: Vec<&str> = deps
                .iter()
                .filter(|(id, d)| !done.contains(*id) && d.iter().all(|x| done.contains(x)))
                .map(|(id, _)| *id)
                .collect();
            if wave.is_empty() {
                return Err(PlanError::Cycle(find_cycle(&deps, &done)));
            }
            done.extend(wave.iter().copied());
            waves.push(wave.into_iter().map(str::to_owned).collect());
        }
        Ok(waves)
    }

    /// The step with id `id`.
    pub fn step(&self, id: &str) -> Option<&PlanStep> {
        self.steps.iter().find(|s| s.id == id)
    }
}

/// A cycle among the steps not yet done (every one of them waits on another).
fn find_cycle(deps: &BTreeMap<&str, BTreeSet<&str>>, done: &BTreeSet<&str>) -> Vec<String> {
    let Some(start) = deps.keys().find(|id| !done.contains(*id)) else {
        return Vec::new();
    };
    let mut path: Vec<&str> = vec![start];
    let mut current = *start;
    loop {
        let Some(next) = deps
            .get(current)
            .and_then(|d| d.iter().find(|x| !done.contains(*x)))
        else {
            return path.into_iter().map(str::to_owned).collect();
        };
        if let Some(at) = path.iter().position(|p| p == next) {
            let mut cycle: Vec<String> = path[at..].iter().map(|s| (*s).to_owned()).collect();
            cycle.push((*next).to_owned());
            return cycle;
        }
        path.push(next);
        current = next;
    }
}

/// The `finish_plan` tool: the planner calls it with the plan, which is validated and kept.
/// A plan that cannot run is refused with the reason, so the planner can fix it.
#[derive(Clone, Default)]
pub struct FinishPlan {
    plan: Arc<Mutex<Option<Plan>>>,
}

impl FinishPlan {
    /// A tool with no plan yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The last valid plan handed over, if any.
    pub fn plan(&self) -> Option<Plan> {
        self.plan
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl TypedTool for FinishPlan {
    type Args = Plan;
    const NAME: &'static str = FINISH_PLAN;

    fn description(&self) -> String {
        "Hands over the finished plan: a goal and steps with ids, descriptions and the ids \
         of the steps each depends on. Call it once, when the plan is complete."
            .into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }

    async fn call(&self, plan: Plan, _: ToolContext) -> Result<ToolOutput, ToolError> {
        let waves = plan
            .waves()
            .map_err(|err| ToolError::failed(format!("the plan cannot run: {err}")))?;
        let steps = plan.steps.len();
        *self.plan.lock().unwrap_or_else(PoisonError::into_inner) = Some(plan);
        Ok(ToolOutput::text(format!(
            "Plan recorded: {steps} steps in {} waves.",
            waves.len()
        )))
    }
}
