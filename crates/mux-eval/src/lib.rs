#![cfg_attr(docsrs, feature(doc_cfg))]
//! Evals for mux agents: "did this change make my agent worse?"
//!
//! A [`Dataset`] of [`Case`]s (built in code, or read from YAML or JSON) runs against an
//! agent: every attempt on a fresh conversation, offline and deterministic from
//! [`Cassettes`] (or a scripted model), or live. The runner is the agent's face: it answers
//! approval questions from each case's script, and keeps each attempt within its budget and
//! timeout. [`Evaluator`]s score each attempt (the answer, the tool trajectory, what the run
//! spent, what happened during it, an LLM judge, or Rust of your own) into a [`Report`]: a
//! terminal [`table`], JSON, a self-contained [`html`] page, and a [`Comparison`] with
//! another report that lists regressions and improvements case by case.
//!
//! ```
//! use mux_eval::{Case, Dataset, EvaluatorSpec, ExpectedCall, Order, Runner, Trajectory};
//! use mux_llm::testing::ScriptedClient;
//! use mux_orchestrator::Agent;
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let model = ScriptedClient::new().respond_with(|_| Ok(mux_llm::Response::from_text("Paris")));
//! let agent = Agent::builder(model, "m").build()?;
//! let dataset = Dataset::new("geo")
//!     .evaluator(EvaluatorSpec::ToolNotCalled { tool: "bash".into() })
//!     .case(Case::new("france", "Capital of France?").expect_output("Paris"))
//!     .case(Case::new("spain", "Capital of Spain?").expect_output("Madrid"));
//! let report = Runner::new(agent).concurrency(2).run(&dataset).await?;
//! assert_eq!(report.totals().passed, 1);
//! println!("{}", mux_eval::table::render(&report));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod assert;
mod bounds;
pub mod build;
mod case;
mod cassettes;
pub mod compare;
mod dataset;
mod drive;
mod error;
pub mod evaluator;
pub mod evaluators;
mod expect;
pub mod html;
mod progress;
mod record;
pub mod report;
mod runner;
mod score;
mod spec;
pub mod table;
pub mod target;
mod telemetry;

pub use assert::{assert_dataset, check_dataset};
pub use case::{Approvals, Case, CaseBudget, Input};
pub use cassettes::Cassettes;
pub use compare::{Change, Comparison};
pub use dataset::{Dataset, MAX_DATASET_BYTES};
pub use error::EvalError;
pub use evaluator::{Check, EvalContext, Evaluator, SharedEvaluator};
pub use evaluators::judge::{Judge, JudgeModel};
pub use expect::{ArgMatcher, ExpectedCall, Order, Trajectory};
pub use record::{ApprovalAsked, Entry, Failure, RunRecord, ToolCall};
pub use report::{Attempt, CaseReport, CaseStats, PassRule, Report, Totals, Verdict, pass_at_k};
pub use runner::{DEFAULT_CONCURRENCY, Runner};
pub use score::Score;
pub use spec::EvaluatorSpec;
pub use target::{CaseEnv, Target};
