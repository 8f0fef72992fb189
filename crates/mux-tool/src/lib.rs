#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("docs/crate.md")]
// Unsafe code is denied; the one exception, the OS sandbox's `pre_exec`, allows it locally.
#![deny(unsafe_code)]

pub mod address;
pub mod approval;
#[cfg(feature = "builtin")]
pub mod builtin;
mod call;
mod context;
mod effect;
mod executor;
mod filter;
pub mod hooks;
mod into_result;
mod output;
mod presentation;
pub mod protected;
mod registry;
mod resources;
mod secret;
pub mod secrets;
mod spec;
mod subject;
#[cfg(feature = "tls")]
pub mod tls;
mod tool;
pub mod truncate;
mod typed;
mod utf8_cut;
mod validation;
mod verdict;
mod withhold;

pub use approval::{ApprovalGate, ApprovalPolicy, ApprovalRequest, GateVerdict, Verdict};
pub use call::{CallOutcome, CallResult, ExecError, HookFailure, ToolCall};
pub use context::{ProgressEvent, ProgressSender, ToolContext, ToolUpdate};
pub use effect::{EffectKey, EffectScope, META_ATTEMPT, META_EFFECT_KEY};
pub use executor::{
    CallScope, DEFAULT_CANCEL_GRACE, DEFAULT_CONCURRENCY, DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT, Executor, ExecutorBuilder,
};
pub use filter::{GlobPattern, ToolFilter};
pub use hooks::{HookError, PostHook, PostHookAction, PreHook, PreHookAction};
pub use into_result::{IntoToolOutput, IntoToolResult};
pub use output::{Content, ToolOutput};
pub use presentation::{
    DIFF_CONTEXT_LINES, Diff, Location, MAX_DIFF_TEXT_BYTES, MAX_DIFFS, MAX_LOCATIONS,
    MAX_PATH_BYTES, MAX_TODO_BYTES, MAX_TODOS, Presentation, TodoItem, TodoPriority, TodoStatus,
};
pub use registry::{Registry, RegistryError, RegistryView};
pub use resources::Resources;
pub use secret::Secret;
pub use spec::{MAX_NAME_LEN, SpecError, ToolAnnotations, ToolKind, ToolName, ToolSpec};
pub use subject::Subject;
pub use tool::{BoxFuture, Tool, ToolError};
pub use typed::{Typed, TypedTool, input_schema_for};
pub use validation::ArgumentProblem;
pub use withhold::PathFilter;

// Re-exported so that users name the same versions in their `TypedTool::Args` derives.
pub use schemars;
pub use serde_json;
