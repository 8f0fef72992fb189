//! Permission settings an agent reads at build, once it knows every tool it offers.

use std::path::{Path, PathBuf};

use mux_permission::{PathContext, Permissions, Scope, ScopeRules, settings};
use serde_json::Value;

use crate::error::AgentBuildError;

/// Where [`AgentBuilder::settings_value`](crate::AgentBuilder::settings_value)'s settings are
/// said to come from in errors.
const VALUE: &str = "<settings value>";

/// Settings given to the agent: a file (`settings.json`) or a value already read.
pub(crate) enum Settings {
    File(PathBuf),
    Value(Value),
}

impl Settings {
    /// The policy of these settings at `root`: their rules as the project scope, accepting
    /// rules that name any of `tools` besides the families, built-in and MCP tools.
    pub(crate) fn load(
        &self,
        root: &Path,
        tools: &[String],
    ) -> Result<Permissions, AgentBuildError> {
        let context = PathContext::new(root);
        let tools: Vec<&str> = tools.iter().map(String::as_str).collect();
        let rules = match self {
            Settings::File(file) => ScopeRules::load_for_tools(file, &context, &tools),
            Settings::Value(value) => {
                settings::parse_for_tools(&value.to_string(), Path::new(VALUE), &context, &tools)
                    .map(ScopeRules::new)
            }
        };
        let rules = rules.map_err(|source| AgentBuildError::Settings {
            file: match self {
                Settings::File(file) => file.clone(),
                Settings::Value(_) => PathBuf::from(VALUE),
            },
            source: Box::new(source),
        })?;
        Ok(Permissions::builder(context)
            .scope(Scope::Project, rules)
            .build())
    }
}
