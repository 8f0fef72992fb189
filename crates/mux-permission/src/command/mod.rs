//! Shell commands: parsing scripts into simple commands and matching command specifiers.

mod allow;
mod analyze;
mod bash_reading;
mod builtins;
mod deny_match;
mod git;
mod glob;
mod inspection;
mod model;
mod pattern;
mod runners;
mod scan;
mod scripts;
mod words;
mod wrappers;

pub use allow::covers;
pub use analyze::{
    Analysis, MAX_SCRIPT_BYTES, analyze, analyze_cold_bash, parse_only, tree_sitter_reading,
};
pub use model::programs;
pub(crate) use pattern::split_words;
pub use pattern::{CommandPattern, CommandPatternError};
