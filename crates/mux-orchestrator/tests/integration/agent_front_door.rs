//! The front door: `Agent::builder(client, model).tool(..).build()`, then `prompt`.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use mux_orchestrator::{Agent, AgentBuildError, LlmClientExt};
use mux_tool::ApprovalPolicy;
use serde_json::json;

#[tokio::test]
async fn an_agent_runs_its_tool_and_answers_and_the_conversation_goes_on() {
    let model = scripted()
        .reply_tool_call("c1", "Bash", json!({"command": "ls"}))
        .reply(text("listed"))
        .reply(text("second answer"));
    let shell = Shell::default();
    let agent = Agent::builder(model.clone(), "m")
        .instructions("Be brief.")
        .tool(shell.clone())
        .approval(ApprovalPolicy::Never)
        .build()
        .unwrap();
    assert_eq!(agent.prompt("list").await.unwrap(), "listed");
    assert_eq!(shell.calls.load(Ordering::SeqCst), 1);
    let summary = agent.run("again").await.unwrap();
    assert_eq!(summary.text, "second answer");
    let requests = model.requests();
    assert_eq!(requests[0].system.as_deref(), Some("Be brief."));
    assert_eq!(
        requests[2].messages.len(),
        5,
        "the second prompt sees the first"
    );
}

#[tokio::test]
async fn without_approval_a_tool_that_is_not_read_only_is_denied_and_named() {
    let model = scripted()
        .reply_tool_call("c1", "Bash", json!({"command": "ls"}))
        .reply(text("could not"));
    let shell = Shell::default();
    let agent = Agent::builder(model, "m")
        .tool(shell.clone())
        .build()
        .unwrap();
    let summary = agent.run("list").await.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 0);
    assert_eq!(summary.unapproved.len(), 1);
    assert_eq!(summary.unapproved[0].tool, "Bash");
}

#[tokio::test]
async fn client_agent_is_the_same_builder_for_a_client_and_a_shared_one() {
    let model = scripted().reply(text("from the client"));
    let agent = model
        .clone()
        .agent("m1")
        .instructions("Short.")
        .build()
        .unwrap();
    assert_eq!(agent.prompt("hi").await.unwrap(), "from the client");
    assert_eq!(model.requests()[0].model, "m1");
    assert_eq!(model.requests()[0].system.as_deref(), Some("Short."));

    let shared_model = scripted().reply(text("from the shared one"));
    let shared: Arc<dyn mux_llm::LlmClient> = Arc::new(shared_model.clone());
    let agent = shared.agent("m2").build().unwrap();
    assert_eq!(agent.prompt("hi").await.unwrap(), "from the shared one");
    assert_eq!(shared_model.requests()[0].model, "m2");
}

#[tokio::test]
async fn a_builder_with_a_tool_named_twice_says_why() {
    let err = Agent::builder(scripted(), "m")
        .tool(Echo)
        .tool(Echo)
        .build()
        .unwrap_err();
    assert!(matches!(err, AgentBuildError::Tool(_)), "{err}");
    assert!(err.to_string().contains("echo"), "{err}");
    let tools: Vec<Arc<dyn mux_tool::Tool>> = Vec::new();
    assert!(Agent::builder(scripted(), "m").tools(tools).build().is_ok());
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema, PartialEq)]
struct Sum {
    /// The sum.
    #[schemars(range(min = 0))]
    total: i64,
}

#[tokio::test]
async fn a_typed_answer_that_does_not_fit_goes_back_once_with_the_problem() {
    let model = scripted()
        .reply(text(r#"{"total": -4}"#))
        .reply(text(r#"{"total": 4}"#));
    let agent = Agent::builder(model.clone(), "m").build().unwrap();
    let sum: Sum = agent.prompt_typed("2 + 2?").await.unwrap();
    assert_eq!(sum, Sum { total: 4 });
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let output = requests[0]
        .output
        .as_ref()
        .expect("the schema was asked for");
    assert_eq!(output.name, "Sum");
    let correction = requests[1].messages.last().unwrap().text();
    assert!(correction.contains("/total"), "{correction}");
    assert!(correction.contains("Sum"), "{correction}");
}

#[tokio::test]
async fn a_second_miss_is_a_typed_error_with_the_reply() {
    let model = scripted().reply(text("four")).reply(text(r#"{"sum": 4}"#));
    let agent = Agent::builder(model, "m").build().unwrap();
    let err = agent.prompt_typed::<Sum>("2 + 2?").await.unwrap_err();
    let mux_orchestrator::LoopError::InvalidOutput {
        schema,
        problem,
        reply,
    } = &err
    else {
        panic!("expected InvalidOutput, got {err:?}");
    };
    assert_eq!(schema, "Sum");
    assert!(problem.contains("total"), "{problem}");
    assert_eq!(reply, r#"{"sum": 4}"#);
    assert_eq!(err.kind(), "invalid_output");
}

#[tokio::test]
async fn needs_approval_decides_per_call_from_the_input() {
    let model = scripted()
        .reply_tool_call("c1", "Bash", json!({"command": "ls"}))
        .reply_tool_call("c2", "Bash", json!({"command": "rm -rf build"}))
        .reply(text("done"));
    let shell = Shell::default();
    let agent = Agent::builder(model, "m")
        .tool(shell.clone())
        .needs_approval("Bash", |input| {
            input["command"]
                .as_str()
                .is_some_and(|c| c.starts_with("rm"))
        })
        .build()
        .unwrap();
    let summary = agent.run("clean").await.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 1, "only `ls` ran");
    assert_eq!(summary.unapproved.len(), 1);
    assert_eq!(summary.unapproved[0].call_id, "c2");
}

#[tokio::test]
async fn agent_session_resumes_a_stored_conversation() {
    let model = scripted().reply(text("noted")).reply(text("you said 42"));
    let store = Arc::new(mux_orchestrator::session::MemorySessionStore::new());
    let agent = Agent::builder(model.clone(), "m")
        .session_store(store)
        .build()
        .unwrap();
    agent.prompt("remember 42").await.unwrap();
    let id = agent.orchestrator().session().id;

    let resumed = agent.session(&id).await.unwrap();
    assert_eq!(resumed.orchestrator().session().id, id);
    assert_eq!(
        resumed.prompt("what did I say?").await.unwrap(),
        "you said 42"
    );
    assert_eq!(
        model.requests()[1].messages.len(),
        3,
        "the resumed conversation sees the stored one"
    );
    let unknown = agent.session("no-such-session").await.unwrap_err();
    assert_eq!(unknown.kind(), "session", "{unknown}");
    let fresh = agent.new_session();
    assert_ne!(fresh.orchestrator().session().id, id);
    assert!(fresh.orchestrator().messages().is_empty());
}

#[tokio::test]
async fn agent_session_without_a_store_says_so() {
    let agent = Agent::builder(scripted(), "m").build().unwrap();
    let err = agent.session("s").await.unwrap_err();
    assert_eq!(err.kind(), "no_session_store", "{err}");
}

/// A tool that says which root it was built for.
struct RootTool {
    spec: mux_tool::ToolSpec,
}

impl mux_tool::Tool for RootTool {
    fn spec(&self) -> &mux_tool::ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        _input: serde_json::Value,
        _cx: mux_tool::ToolContext,
    ) -> mux_tool::BoxFuture<'_, Result<mux_tool::ToolOutput, mux_tool::ToolError>> {
        let description = self.spec.description.clone();
        Box::pin(async move { Ok(mux_tool::ToolOutput::text(description)) })
    }
}

fn root_tools(
    root: &std::path::Path,
) -> Result<Vec<Arc<dyn mux_tool::Tool>>, mux_orchestrator::ToolsetError> {
    if !root.is_dir() {
        return Err(format!("{} is not a directory", root.display()).into());
    }
    let spec = mux_tool::ToolSpec::new(
        "where",
        root.display().to_string(),
        json!({"type": "object", "properties": {}}),
    )?;
    Ok(vec![Arc::new(RootTool { spec })])
}

#[tokio::test]
async fn tools_at_are_built_for_each_root_and_a_failure_names_the_root() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let agent = Agent::builder(scripted(), "m")
        .tool(Echo)
        .tools_at(root_tools)
        .root(one.path())
        .build()
        .unwrap();
    assert_eq!(agent.root(), one.path());
    let description =
        |tools: &mux_tool::Registry| tools.get("where").unwrap().spec().description.clone();
    assert_eq!(
        description(agent.orchestrator().tools()),
        one.path().display().to_string()
    );
    let other = agent.conversation_at(two.path()).unwrap().build();
    assert_eq!(description(other.tools()), two.path().display().to_string());
    assert!(other.tools().contains("echo"), "fixed tools come along");
    assert_ne!(other.session().id, agent.orchestrator().session().id);

    let missing = one.path().join("missing");
    let err = agent.conversation_at(&missing).unwrap_err();
    assert!(matches!(err, AgentBuildError::Toolset { .. }), "{err}");
    assert!(err.to_string().contains("missing"), "{err}");
    let err = Agent::builder(scripted(), "m")
        .tools_at(root_tools)
        .root(&missing)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[tokio::test]
async fn each_conversation_gets_a_session_scope_of_its_own_anchored_at_its_root() {
    use mux_permission::{PathContext, Permissions, Scope};
    let dir = tempfile::tempdir().unwrap();
    let permissions = Permissions::builder(PathContext::new("/")).build();
    let agent = Agent::builder(scripted(), "m")
        .permissions(permissions)
        .build()
        .unwrap();
    let session = agent.conversation_at(dir.path()).unwrap().build();
    let policy = session.permissions().unwrap();
    assert_eq!(policy.context().root(), dir.path());
    policy.scope(Scope::Session).unwrap().add(
        mux_permission::RuleKind::Allow,
        mux_permission::Rule::parse("echo").unwrap(),
    );
    let mine = agent.orchestrator().permissions().unwrap();
    assert!(
        mine.scope(Scope::Session)
            .unwrap()
            .read()
            .list(mux_permission::RuleKind::Allow)
            .is_empty(),
        "a rule one conversation remembers stays in it"
    );
}

/// An approval policy beside a permission policy would be ignored (the policy's rules and
/// mode decide every call): the build refuses it and says what to do instead (before, the
/// tool was denied at run time with "no one is available to approve this call").
#[test]
fn an_approval_policy_beside_a_permission_policy_is_refused_not_ignored() {
    use mux_permission::{PathContext, Permissions};
    for approval in [ApprovalPolicy::Never, ApprovalPolicy::Always] {
        let err = Agent::builder(scripted(), "m")
            .tool(Shell::default())
            .permissions(Permissions::builder(PathContext::new("/")).build())
            .approval(approval)
            .build()
            .unwrap_err();
        assert!(
            matches!(err, AgentBuildError::ApprovalBesidePermissions(a) if a == approval),
            "{err:?}"
        );
        assert!(err.to_string().contains("bypassPermissions"), "{err}");
    }
    // The default beside a policy, and any policy alone, build.
    Agent::builder(scripted(), "m")
        .permissions(Permissions::builder(PathContext::new("/")).build())
        .approval(ApprovalPolicy::UnlessReadOnly)
        .build()
        .unwrap();
    Agent::builder(scripted(), "m")
        .approval(ApprovalPolicy::Never)
        .build()
        .unwrap();
}

/// `prompt` returns only text, which cannot say that the run was cut short or that calls
/// were denied: both are errors carrying the text (before: `Ok` with empty or partial text
/// and a warning in the log). `run` keeps reporting them in its summary.
#[tokio::test]
async fn prompt_fails_loudly_at_a_limit_and_on_calls_no_one_could_approve() {
    use mux_orchestrator::{LimitReached, LoopError, RunLimits};
    let model = scripted()
        .reply_tool_call("c1", "Bash", json!({"command": "ls"}))
        .reply(text("could not"));
    let agent = Agent::builder(model, "m")
        .tool(Shell::default())
        .build()
        .unwrap();
    let err = agent.prompt("list").await.unwrap_err();
    let LoopError::Unapproved { calls, summary } = &err else {
        panic!("{err:?}");
    };
    assert_eq!((calls.len(), calls[0].tool.as_str()), (1, "Bash"));
    assert_eq!(summary.text, "could not");
    // The whole run comes with the error: the denied call is in it as the model read it.
    assert_eq!(summary.tool_calls.len(), 1);
    assert!(summary.tool_calls[0].output.is_error);
    assert!(err.to_string().contains("`Bash`"), "{err}");
    assert_eq!(err.kind(), "unapproved");

    let model = scripted()
        .reply_tool_call("c1", "Bash", json!({"command": "ls"}))
        .reply(text("never reached"));
    let agent = Agent::builder(model, "m")
        .tool(Shell::default())
        .approval(ApprovalPolicy::Never)
        .limits(RunLimits::new().model_calls(1))
        .build()
        .unwrap();
    let err = agent.prompt("list").await.unwrap_err();
    assert!(
        matches!(
            &err,
            LoopError::LimitReached {
                limit: LimitReached::ModelCalls { max: 1 },
                ..
            }
        ),
        "{err:?}"
    );
    let LoopError::LimitReached { summary, .. } = &err else {
        unreachable!()
    };
    // The call made before the limit is in the summary, its output as the model read it.
    assert_eq!(summary.tool_calls.len(), 1, "{summary:?}");
    assert_eq!(summary.iterations, 1);
    assert_eq!(err.kind(), "limit_reached");
}

/// What a face adds to one conversation stays in it: its context joins that conversation's
/// instructions only, and its loop setting changes that conversation only.
#[tokio::test]
async fn a_faces_context_and_setting_stay_in_its_conversation() {
    let model = scripted().reply(text("one")).reply(text("two"));
    let agent = Agent::builder(model.clone(), "m")
        .instructions("Be brief.")
        .build()
        .unwrap();
    let face = agent
        .conversation_at(agent.root())
        .unwrap()
        .add_context(mux_orchestrator::context::FnContext::new("page", || {
            Some("The page shows a chart.".into())
        }))
        .reconfigure(|config| config.max_iterations(7))
        .build();
    face.run_to_completion("hi").await.unwrap();
    agent.prompt("hi").await.unwrap();
    let requests = model.requests();
    let system = |i: usize| requests[i].system.clone().unwrap_or_default();
    assert!(system(0).contains("Be brief."), "{}", system(0));
    assert!(
        system(0).contains("The page shows a chart."),
        "{}",
        system(0)
    );
    assert!(!system(1).contains("chart"), "{}", system(1));
    assert_eq!(face.config().max_iterations, 7);
    assert_ne!(agent.config().max_iterations, 7);
}

/// A face whose modes need a policy (the editor's) gets the shared default at the
/// conversation's root when the agent runs without one; otherwise the conversation's own.
#[test]
fn a_face_gets_a_policy_for_its_modes_at_the_conversations_root() {
    let dir = tempfile::tempdir().unwrap();
    let unasked = Agent::builder(scripted(), "m")
        .approval(ApprovalPolicy::Never)
        .build()
        .unwrap();
    let mut builder = unasked.conversation_at(dir.path()).unwrap();
    let policy = builder.policy_for_face();
    assert!(policy.is_unset());
    assert_eq!(policy.context().root(), dir.path());
    let conversation = builder.build();
    assert!(conversation.permissions().unwrap().is_unset());

    let strict =
        mux_permission::Permissions::builder(mux_permission::PathContext::new("/")).build();
    let agent = Agent::builder(scripted(), "m")
        .permissions(strict)
        .build()
        .unwrap();
    let policy = agent.conversation_at(dir.path()).unwrap().policy_for_face();
    assert!(!policy.is_unset());
    assert_eq!(policy.context().root(), dir.path());
}
