//! `AgentBuilder::settings` reads its rules once the agent knows its tools: a rule may name an
//! application's own tool (`deploy`), and one naming no tool of the agent fails the build
//! with an error that names the file and the rule.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::*;
use mux_orchestrator::{Agent, AgentBuildError, AgentBuilder};
use mux_permission::{LoadError, PathContext, Permissions};
use mux_tool::{ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Target {
    /// Where to.
    env: String,
}

/// Counts a tool's calls.
#[derive(Clone, Default)]
struct Calls(Arc<AtomicUsize>);

impl Calls {
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// An application's own tool named `$name`, not read-only (so it asks unless a rule allows
/// it), counting its calls.
macro_rules! custom_tool {
    ($tool:ident, $name:literal) => {
        #[derive(Clone, Default)]
        struct $tool(Calls);

        impl TypedTool for $tool {
            type Args = Target;
            const NAME: &'static str = $name;
            fn description(&self) -> String {
                concat!($name, " to an environment").into()
            }
            async fn call(&self, args: Target, _: ToolContext) -> Result<ToolOutput, ToolError> {
                (self.0).0.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text(format!("{} {}", $name, args.env)))
            }
        }
    };
}

custom_tool!(Deploy, "deploy");
custom_tool!(Rollback, "rollback");

/// An agent with `deploy` and `rollback` whose model calls both, then answers.
fn agent_with_tools(deploy: &Deploy, rollback: &Rollback) -> AgentBuilder {
    let model = scripted()
        .reply(tool_calls(&[
            ("c1", "deploy", json!({"env": "prod"})),
            ("c2", "rollback", json!({"env": "prod"})),
        ]))
        .reply(text("done"));
    Agent::builder(model, "m")
        .tool(deploy.clone())
        .tool(rollback.clone())
}

fn write(dir: &Path, settings: serde_json::Value) -> std::path::PathBuf {
    let file = dir.join("settings.json");
    std::fs::write(&file, settings.to_string()).unwrap();
    file
}

#[tokio::test]
async fn a_rule_naming_a_custom_tool_loads_and_decides_its_calls() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        json!({"permissions": {
            "allow": ["deploy", "mcp__ops__status"],
            "deny": ["rollback"],
        }}),
    );
    let (deploy, rollback) = (Deploy::default(), Rollback::default());
    let agent = agent_with_tools(&deploy, &rollback)
        .settings(&file)
        .root(dir.path())
        .build()
        .unwrap();
    let summary = agent.run("ship it").await.unwrap();
    assert_eq!(
        deploy.0.get(),
        1,
        "the allow rule lets `deploy` run unasked"
    );
    assert_eq!(rollback.0.get(), 0, "the deny rule stops `rollback`");
    assert!(summary.unapproved.is_empty(), "{:?}", summary.unapproved);
    let outputs: Vec<_> = summary
        .tool_calls
        .iter()
        .map(|call| (call.name.as_str(), call.output.is_error))
        .collect();
    assert_eq!(outputs, [("deploy", false), ("rollback", true)]);
    // The file is the policy's project scope, so "always" answers for the project land there.
    let project = agent
        .permissions()
        .unwrap()
        .scope(mux_permission::Scope::Project)
        .unwrap();
    assert_eq!(project.file(), Some(file.as_path()));
}

#[tokio::test]
async fn a_loaded_value_names_custom_tools_too() {
    let (deploy, rollback) = (Deploy::default(), Rollback::default());
    let agent = agent_with_tools(&deploy, &rollback)
        .settings_value(json!({"permissions": {"allow": ["deploy", "rollback"]}}))
        .build()
        .unwrap();
    agent.run("ship it").await.unwrap();
    assert_eq!((deploy.0.get(), rollback.0.get()), (1, 1));
}

#[test]
fn a_rule_naming_no_tool_of_the_agent_fails_the_build_naming_file_and_rule() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), json!({"permissions": {"deny": ["depoly"]}}));
    let (deploy, rollback) = (Deploy::default(), Rollback::default());
    let err = agent_with_tools(&deploy, &rollback)
        .settings(&file)
        .build()
        .unwrap_err();
    let AgentBuildError::Settings {
        file: named,
        source,
    } = &err
    else {
        panic!("expected a settings error, got {err:?}");
    };
    let LoadError::UnknownTool {
        tool, suggestion, ..
    } = &**source
    else {
        panic!("expected an unknown tool in the settings, got {source:?}");
    };
    assert_eq!(named, &file);
    assert_eq!(tool, "depoly");
    assert_eq!(suggestion.as_deref(), Some("deploy"));
    let message = err.to_string();
    assert!(message.contains(&file.display().to_string()), "{message}");
    assert!(message.contains("depoly"), "{message}");
}

#[test]
fn a_file_that_is_not_json_or_a_rule_that_does_not_parse_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    for bad in [
        "{\"permissions\": ",
        "{\"permissions\": {\"allow\": [\"Bash(\"]}}",
    ] {
        let file = dir.path().join("settings.json");
        std::fs::write(&file, bad).unwrap();
        let err = Agent::builder(scripted(), "m")
            .settings(&file)
            .build()
            .unwrap_err();
        assert!(
            matches!(&err, AgentBuildError::Settings { file: named, .. } if *named == file),
            "{bad}: {err:?}"
        );
    }
    let err = Agent::builder(scripted(), "m")
        .settings_value(json!({"permissions": {"allow": "deploy"}}))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("<settings value>"), "{err}");
}

#[test]
fn settings_beside_a_policy_or_an_approval_policy_are_refused() {
    let err = Agent::builder(scripted(), "m")
        .settings_value(json!({}))
        .permissions(Permissions::builder(PathContext::new(".")).build())
        .build()
        .unwrap_err();
    assert!(
        matches!(err, AgentBuildError::SettingsBesidePermissions),
        "{err:?}"
    );
    let err = Agent::builder(scripted(), "m")
        .settings_value(json!({}))
        .approval(mux_tool::ApprovalPolicy::Never)
        .build()
        .unwrap_err();
    assert!(
        matches!(err, AgentBuildError::ApprovalBesidePermissions(_)),
        "{err:?}"
    );
}
