//! Runs a dataset: every case (and repeat) on a fresh conversation of the target, at a
//! bounded concurrency, offline from cassettes or live, scored by its evaluators, into a
//! [`Report`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::panic::AssertUnwindSafe;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use mux_orchestrator::Agent;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracing::Instrument;

use crate::build;
use crate::case::{Case, CaseBudget};
use crate::cassettes::{self, Cassettes};
use crate::dataset::Dataset;
use crate::drive::{drive, fail};
use crate::error::EvalError;
use crate::evaluator::{EvalContext, SharedEvaluator};
use crate::evaluators::judge::JudgeModel;
use crate::progress::Progress;
use crate::record::{Entry, RunRecord};
use crate::report::{Attempt, CaseReport, CaseStats, PassRule, Report, Verdict};
use crate::score::Score;
use crate::target::{CaseEnv, Target};
use crate::telemetry;

/// The most attempts run at once by default.
pub const DEFAULT_CONCURRENCY: usize = 4;

type TypedCall =
    Arc<dyn Fn(Agent, String) -> BoxFuture<'static, Result<Value, String>> + Send + Sync>;

/// Runs datasets against a target.
///
/// ```
/// use mux_eval::{Case, Dataset, Runner};
/// use mux_llm::testing::ScriptedClient;
/// use mux_orchestrator::Agent;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let model = ScriptedClient::new().respond_with(|_| Ok(mux_llm::Response::from_text("Lima")));
/// let agent = Agent::builder(model, "m").build()?;
/// let dataset = Dataset::new("capitals").case(Case::new("peru", "Capital of Peru?").expect_output("Lima"));
/// let report = Runner::new(agent).run(&dataset).await?;
/// assert!(report.passed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Runner {
    target: Arc<dyn Target>,
    concurrency: usize,
    repeats: u32,
    rule: PassRule,
    judge: Option<JudgeModel>,
    cassettes: Option<Cassettes>,
    budget: CaseBudget,
    evaluators: Vec<SharedEvaluator>,
    typed: Option<TypedCall>,
    progress: Option<bool>,
    deadline: Option<Duration>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("concurrency", &self.concurrency)
            .field("repeats", &self.repeats)
            .field("rule", &self.rule)
            .field("cassettes", &self.cassettes)
            .finish_non_exhaustive()
    }
}

impl Runner {
    /// A runner for `target` (an [`Agent`], or [`target::from_fn`](crate::target::from_fn)).
    pub fn new(target: impl Target + 'static) -> Self {
        Self {
            target: Arc::new(target),
            concurrency: DEFAULT_CONCURRENCY,
            repeats: 1,
            rule: PassRule::All,
            judge: None,
            cassettes: None,
            budget: CaseBudget::default(),
            evaluators: Vec::new(),
            typed: None,
            progress: None,
            deadline: None,
        }
    }

    /// Runs at most `n` attempts at once (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Runs every case `n` times (at least 1), for pass@k, the mean and the spread.
    pub fn repeats(mut self, n: u32) -> Self {
        self.repeats = n.max(1);
        self
    }

    /// When a case with several attempts passes (default: all attempts pass).
    pub fn rule(mut self, rule: PassRule) -> Self {
        self.rule = rule;
        self
    }

    /// The model of the `judge` evaluators.
    pub fn judge(mut self, model: JudgeModel) -> Self {
        self.judge = Some(model);
        self
    }

    /// Replays (or records) each case's model traffic from `cassettes`; the target reads
    /// the server's URL in [`CaseEnv::model_url`].
    pub fn cassettes(mut self, cassettes: Cassettes) -> Self {
        self.cassettes = Some(cassettes);
        self
    }

    /// The budget of every attempt where neither the case nor the dataset sets one.
    pub fn budget(mut self, budget: CaseBudget) -> Self {
        self.budget = budget;
        self
    }

    /// Adds an evaluator (custom, in Rust) of every case.
    pub fn evaluator(mut self, evaluator: SharedEvaluator) -> Self {
        self.evaluators.push(evaluator);
        self
    }

    /// Draws the progress line (`true`), never (`false`); by default only when stderr is a
    /// terminal.
    pub fn progress(mut self, draw: bool) -> Self {
        self.progress = Some(draw);
        self
    }

    /// Bounds the whole run: attempts not started by then fail with `deadline`.
    pub fn deadline(mut self, limit: Duration) -> Self {
        self.deadline = Some(limit);
        self
    }

    /// Asks for structured output: each attempt is [`Agent::prompt_typed::<O>`] on the last
    /// message (earlier ones are plain runs), and the answer is kept as JSON for the
    /// evaluators. Tool calls and approvals are not recorded in this mode.
    pub fn typed<O>(mut self) -> Self
    where
        O: JsonSchema + DeserializeOwned + Serialize + Send + 'static,
    {
        self.typed = Some(Arc::new(|agent: Agent, prompt: String| {
            Box::pin(async move {
                let value: O = agent
                    .prompt_typed(prompt)
                    .await
                    .map_err(|e| e.to_string())?;
                serde_json::to_value(value).map_err(|e| e.to_string())
            })
        }));
        self
    }

    /// Runs `dataset` and reports. Settings errors (a bad regex, a judge without a model, a
    /// recording with repeats) come before any attempt runs.
    pub async fn run(&self, dataset: &Dataset) -> Result<Report, EvalError> {
        dataset.validate()?;
        let plans = self.plan(dataset)?;
        let started = Instant::now();
        let deadline = self.deadline.map(|d| started + d);
        let jobs: Vec<(usize, u32)> = (0..plans.len())
            .flat_map(|case| (0..self.repeats).map(move |attempt| (case, attempt)))
            .collect();
        let mut progress = Progress::new(jobs.len(), self.progress);
        let plans = &plans;
        let mut results = futures::stream::iter(jobs)
            .map(|(index, attempt)| {
                let plan = &plans[index];
                let span = telemetry::case_span(&dataset.name, &plan.case.name, attempt);
                let traced = span.clone();
                async move {
                    let outcome = self.attempt(plan, attempt, deadline).await;
                    telemetry::record(&traced, &outcome);
                    (index, attempt, outcome)
                }
                .instrument(span)
            })
            .buffer_unordered(self.concurrency);
        let mut attempts: BTreeMap<(usize, u32), Attempt> = BTreeMap::new();
        while let Some((index, attempt, outcome)) = results.next().await {
            progress.tick(outcome.passed);
            attempts.insert((index, attempt), outcome);
        }
        progress.finish();
        let mut cases = Vec::with_capacity(plans.len());
        for (index, plan) in plans.iter().enumerate() {
            let mine: Vec<Attempt> = (0..self.repeats)
                .filter_map(|a| attempts.remove(&(index, a)))
                .collect();
            cases.push(CaseReport {
                name: plan.case.name.clone(),
                input: plan.case.input.text(),
                tags: plan.case.tags.clone(),
                expected_output: plan.case.expected_output.clone(),
                stats: CaseStats::of(&mine, self.rule),
                attempts: mine,
            });
        }
        Ok(Report {
            name: dataset.name.clone(),
            repeats: self.repeats,
            rule: self.rule,
            cases,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }

    fn plan(&self, dataset: &Dataset) -> Result<Vec<Plan>, EvalError> {
        if let Some(cassettes) = &self.cassettes {
            if cassettes.recording() && self.repeats > 1 {
                return Err(EvalError::Settings(
                    "recording cassettes with repeats would record each case several times; record with one attempt".into(),
                ));
            }
            let mut stems = BTreeMap::new();
            for case in &dataset.cases {
                let stem = cassettes::file_stem(&case.name);
                if let Some(other) = stems.insert(stem, case.name.clone()) {
                    return Err(EvalError::InvalidDataset {
                        dataset: dataset.name.clone(),
                        message: format!(
                            "cases {other:?} and {:?} would share a cassette file",
                            case.name
                        ),
                    });
                }
            }
        }
        let mut shared = self.evaluators.clone();
        for spec in &dataset.evaluators {
            shared.push(build::build(spec, "*", self.judge.as_ref())?);
        }
        dataset
            .cases
            .iter()
            .map(|case| {
                Ok(Plan {
                    evaluators: build::for_case(case, &shared, self.judge.as_ref())?,
                    budget: case.budget.or(&dataset.budget).or(&self.budget),
                    case: case.clone(),
                })
            })
            .collect()
    }

    async fn attempt(&self, plan: &Plan, attempt: u32, deadline: Option<Instant>) -> Attempt {
        let run = if deadline.is_some_and(|at| Instant::now() >= at) {
            let mut record = RunRecord::default();
            fail(
                &mut record,
                "deadline",
                "the eval's deadline passed before this attempt started".into(),
            );
            record
        } else {
            self.record(plan, attempt).await
        };
        let cx = EvalContext {
            case: &plan.case,
            run: &run,
        };
        let mut verdicts = Vec::with_capacity(plan.evaluators.len());
        for evaluator in &plan.evaluators {
            // A custom evaluator that panics fails its verdict, not the whole run.
            let outcome = AssertUnwindSafe(async { evaluator.evaluate(cx).await })
                .catch_unwind()
                .await;
            let verdict = match outcome {
                Ok(Ok(score)) => Verdict {
                    evaluator: evaluator.name(),
                    score,
                    error: None,
                },
                Ok(Err(err)) => Verdict {
                    evaluator: evaluator.name(),
                    score: Score::fail(err.to_string()),
                    error: Some(err.to_string()),
                },
                Err(panic) => {
                    let message = panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic without a message".to_owned());
                    let error = format!("the evaluator panicked: {message}");
                    Verdict {
                        evaluator: evaluator.name(),
                        score: Score::fail(error.clone()),
                        error: Some(error),
                    }
                }
            };
            verdicts.push(verdict);
        }
        Attempt::new(run, verdicts)
    }

    async fn record(&self, plan: &Plan, attempt: u32) -> RunRecord {
        let case = &plan.case;
        let server = match &self.cassettes {
            Some(cassettes) => match cassettes.start(&case.name).await {
                Ok(server) => Some(server),
                Err(err) => {
                    let mut record = RunRecord::default();
                    fail(&mut record, "cassette", err.to_string());
                    return record;
                }
            },
            None => None,
        };
        let url = server.as_ref().map(|s| s.url());
        let env = CaseEnv {
            case,
            attempt,
            model_url: url.as_deref(),
        };
        let agent = match self.target.agent(&env) {
            Ok(agent) => agent,
            Err(message) => {
                let mut record = RunRecord::default();
                fail(&mut record, "target", message);
                return record;
            }
        };
        let mut record = match &self.typed {
            Some(call) => typed(&agent, case, &plan.budget, call).await,
            None => drive(&agent, case, &plan.budget).await,
        };
        if let Some(server) = &server {
            cassettes::check(server, &mut record);
        }
        record
    }
}

/// A case prepared to run: its evaluators built and its budget settled.
struct Plan {
    case: Case,
    evaluators: Vec<SharedEvaluator>,
    budget: CaseBudget,
}

async fn typed(agent: &Agent, case: &Case, budget: &CaseBudget, call: &TypedCall) -> RunRecord {
    let started = Instant::now();
    let mut record = RunRecord::default();
    let messages = case.input.messages();
    let work = async {
        let Some((last, earlier)) = messages.split_last() else {
            return Err(("input".to_owned(), "the case has no message".to_owned()));
        };
        for message in earlier {
            agent
                .run(*message)
                .await
                .map_err(|e| (e.kind().to_owned(), e.to_string()))?;
        }
        call(agent.clone(), (*last).to_owned())
            .await
            .map_err(|message| ("typed".to_owned(), message))
    };
    for message in &messages {
        record.transcript.push(Entry::User {
            text: (*message).to_owned(),
        });
    }
    let outcome = match budget.timeout() {
        Some(limit) => match tokio::time::timeout(limit, work).await {
            Ok(outcome) => outcome,
            Err(_) => Err((
                "timeout".to_owned(),
                format!("the case took longer than {} s", limit.as_secs_f64()),
            )),
        },
        None => work.await,
    };
    match outcome {
        Ok(value) => {
            record.output = value.to_string();
            record.transcript.push(Entry::Assistant {
                text: record.output.clone(),
            });
            record.output_json = Some(value);
        }
        Err((kind, message)) => fail(&mut record, &kind, message),
    }
    record.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    record
}
