#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("docs/crate.md")]
#![forbid(unsafe_code)]

/// The crate's README.md (its crates.io page), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod address;
mod answer;
pub mod builtin;
pub mod command;
mod domain;
mod family;
mod gate;
mod mode;
mod path;
mod permissions;
mod prepared;
mod protected;
mod remember;
mod rule;
mod ruleset;
pub mod sandbox;
mod scope_rules;
pub mod settings;
mod wall;

pub use answer::Answer;
pub use domain::{DomainPattern, DomainPatternError, host_of};
pub use family::Family;
pub use gate::{Asker, PermissionGate, Question, RecordedAnswer, asker_fn};
pub use mode::{Mode, UnknownMode};
/// The one verdict type: a [`Verdict`] with its reason, rule and scope, defined in mux-tool
/// so the executor's gate returns the same value.
pub use mux_tool::GateVerdict;
/// The policy's allow / ask / deny, defined in mux-tool so the executor's gate shares it.
pub use mux_tool::Verdict;
/// The scope a rule or mode comes from, defined in mux-tool so a verdict can name it.
pub use mux_tool::approval::Scope;
pub use path::{PathContext, PathPattern, PathPatternError, resolve};
pub use permissions::{Permissions, PermissionsBuilder};
pub use remember::{Remember, RememberError, suggest_prefixes};
pub use rule::{Rule, RuleError, RuleKind, RuleProblem};
pub use ruleset::RuleSet;
pub use sandbox::SandboxSettings;
pub use scope_rules::ScopeRules;
pub use settings::{LoadError, SaveError};
pub use wall::{Outside, WallOrigin, WallPath, Walls};
