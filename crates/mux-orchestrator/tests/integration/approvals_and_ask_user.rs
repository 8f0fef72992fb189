//! Approval through the face (once, always, deny, timeout) and `ask_user`.

use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use mux_orchestrator::{Answer, LoopEvent, LoopInput, Orchestrator, OrchestratorConfig, Run};
use mux_permission::{PathContext, Permissions, Remember, RuleSet, Scope, ScopeRules};
use mux_tool::{ApprovalPolicy, Registry};
use serde_json::json;

fn shell_agent(
    model: mux_llm::testing::ScriptedClient,
    config: OrchestratorConfig,
) -> (Orchestrator, Shell) {
    let shell = Shell::default();
    let registry = Registry::new();
    registry.register_typed(shell.clone()).unwrap();
    let permissions = Permissions::builder(PathContext::new("."))
        .scope(
            Scope::Project,
            ScopeRules::new(RuleSet::new().with_deny("Bash(rm:*)").unwrap()),
        )
        .build();
    let agent = loop_agent(model, config)
        .tools(registry.list())
        .permissions(permissions)
        .conversation();
    (agent, shell)
}

/// A model that runs `git status` in two calls (`c1`, `c2`), then answers "done".
fn git_status_twice() -> mux_llm::testing::ScriptedClient {
    scripted()
        .reply(tool_calls(&[(
            "c1",
            "Bash",
            json!({"command": "git status"}),
        )]))
        .reply(tool_calls(&[(
            "c2",
            "Bash",
            json!({"command": "git status"}),
        )]))
        .reply(text("done"))
}

#[tokio::test]
async fn allow_once_runs_the_call_and_asks_again_next_time() {
    let (agent, shell) = shell_agent(git_status_twice(), OrchestratorConfig::new("m"));
    let (events, outcome) =
        answer_approvals(agent.run("go").unwrap(), || Some(Answer::AllowOnce)).await;
    outcome.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 2);
    let asked = labels(&events)
        .iter()
        .filter(|l| l.starts_with("approval_required"))
        .count();
    assert_eq!(asked, 2);
    insta::assert_json_snapshot!("allow_once", labels(&events));
}

#[tokio::test]
async fn allow_always_adds_a_session_rule_so_the_next_call_is_not_asked() {
    let (agent, shell) = shell_agent(git_status_twice(), OrchestratorConfig::new("m"));
    let always = || {
        Some(Answer::AllowAlways {
            remember: Remember::exact(Scope::Session),
        })
    };
    let (events, outcome) = answer_approvals(agent.run("go").unwrap(), always).await;
    outcome.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 2);
    let labels = labels(&events);
    assert_eq!(
        labels
            .iter()
            .filter(|l| l.starts_with("approval_required"))
            .count(),
        1,
        "{labels:#?}"
    );
    assert!(labels.contains(&"approved c1 always=true".to_owned()));
    let session = agent.permissions().unwrap().scope(Scope::Session).unwrap();
    let allowed: Vec<String> = session
        .read()
        .list(mux_permission::RuleKind::Allow)
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert_eq!(allowed, ["Bash(git status)"]);
}

#[tokio::test]
async fn a_denial_reaches_the_model_with_its_reason() {
    let model = scripted()
        .reply(tool_calls(&[(
            "c1",
            "Bash",
            json!({"command": "git push"}),
        )]))
        .reply(text("ok"));
    let (agent, shell) = shell_agent(model.clone(), OrchestratorConfig::new("m"));
    let deny = || {
        Some(Answer::Deny {
            reason: "not on a Friday".into(),
        })
    };
    let (events, outcome) = answer_approvals(agent.run("go").unwrap(), deny).await;
    let summary = outcome.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 0);
    let output = &summary.tool_calls[0].output;
    assert!(output.is_error);
    assert_eq!(
        output.to_text(),
        "permission to run tool `Bash` was denied: not on a Friday"
    );
    assert!(labels(&events).contains(&"denied c1 \"not on a Friday\"".to_owned()));
    let sent = model.requests()[1].messages.last().unwrap().clone();
    assert!(
        serde_json::to_string(&sent)
            .unwrap()
            .contains("not on a Friday")
    );
}

#[tokio::test]
async fn a_deny_rule_needs_no_face() {
    let model = scripted()
        .reply(tool_calls(&[(
            "c1",
            "Bash",
            json!({"command": "rm -rf /"}),
        )]))
        .reply(text("ok"));
    let (agent, shell) = shell_agent(model, OrchestratorConfig::new("m"));
    let (events, outcome) =
        answer_approvals(agent.run("go").unwrap(), || panic!("must not ask")).await;
    outcome.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 0);
    assert!(labels(&events).iter().any(|l| l.starts_with("denied c1")));
}

#[tokio::test(start_paused = true)]
async fn no_answer_within_the_timeout_means_deny() {
    let model = scripted()
        .reply(tool_calls(&[("c1", "Bash", json!({"command": "make"}))]))
        .reply(text("ok"));
    let config = OrchestratorConfig::new("m").approval_timeout(Duration::from_secs(30));
    let (agent, shell) = shell_agent(model, config);
    let (_, outcome) = answer_approvals(agent.run("go").unwrap(), || None).await;
    let summary = outcome.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 0);
    assert!(
        summary.tool_calls[0]
            .output
            .to_text()
            .contains("no approval arrived within 30s")
    );
}

#[tokio::test]
async fn an_answer_for_an_unknown_call_is_rejected_visibly() {
    let model = scripted()
        .reply(tool_calls(&[("c1", "sleep", json!({"ms": 100}))]))
        .reply(text("ok"));
    let agent = orchestrator(model);
    let run = agent.run("go").unwrap();
    run.input
        .send(LoopInput::ToolApproval {
            call_id: "nope".into(),
            answer: Answer::AllowOnce,
        })
        .await;
    let (events, _) = drain(run).await;
    assert!(
        events.iter().any(
            |e| matches!(e, LoopEvent::InputRejected { message } if message.contains("`nope`"))
        )
    );
}

#[tokio::test]
async fn ask_user_waits_for_the_users_answer() {
    let model = scripted()
        .reply(tool_calls(&[(
            "q1",
            "ask_user",
            json!({"question": "Which branch?"}),
        )]))
        .reply(text("using main"));
    let agent = orchestrator(model.clone());
    let Run {
        mut events,
        input,
        handle,
    } = agent.run("deploy").unwrap();
    let mut states = Vec::new();
    while let Some(event) = events.recv().await {
        match event {
            LoopEvent::AwaitingInput { call_id, question } => {
                assert_eq!(question, "Which branch?");
                input
                    .send(LoopInput::UserResponse {
                        call_id,
                        text: "main".into(),
                    })
                    .await;
            }
            LoopEvent::StateChanged { to, .. } => states.push(to.to_string()),
            _ => {}
        }
    }
    let summary = handle.wait().await.unwrap();
    assert_eq!(summary.tool_calls[0].output.to_text(), "main");
    assert_eq!(
        states,
        [
            "streaming",
            "executing_tools",
            "awaiting_input",
            "executing_tools",
            "streaming",
            "complete"
        ]
    );
}

#[tokio::test]
async fn run_to_completion_denies_what_it_cannot_ask() {
    let model = scripted()
        .reply(tool_calls(&[("c1", "Bash", json!({"command": "ls"}))]))
        .reply(text("ok"));
    let (agent, shell) = shell_agent(model, OrchestratorConfig::new("m"));
    let summary = agent.run_to_completion("go").await.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 0);
    assert!(
        summary.tool_calls[0]
            .output
            .to_text()
            .contains("no one is available to approve")
    );
    // Not silent: the summary names the call, and why it needed approval.
    assert_eq!(summary.unapproved.len(), 1, "{:?}", summary.unapproved);
    assert_eq!(summary.unapproved[0].tool, "Bash");
    assert_eq!(summary.unapproved[0].call_id, "c1");
}

/// Without a policy, the approval policy decides which calls need a face: by default a tool
/// that is not read-only is denied in a face-less run, and named in the summary;
/// `ApprovalPolicy::Never` runs it; `ApprovalPolicy::Always` asks even for read-only tools.
#[tokio::test]
async fn without_a_policy_the_approval_policy_decides_and_denials_are_not_silent() {
    let script = || {
        scripted()
            .reply_tool_call("c1", "Bash", json!({"command": "ls"}))
            .reply(text("ok"))
    };
    let agent = |config: OrchestratorConfig| {
        let shell = Shell::default();
        let registry = Registry::new();
        registry.register_typed(shell.clone()).unwrap();
        let agent = loop_agent(script(), config)
            .tools(registry.list())
            .conversation();
        (agent, shell)
    };

    let (default, shell) = agent(OrchestratorConfig::new("m"));
    let summary = default.run_to_completion("go").await.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 0);
    assert_eq!(summary.unapproved.len(), 1);
    assert!(
        summary.unapproved[0].reason.contains("not read-only"),
        "{:?}",
        summary.unapproved
    );

    let (open, shell) = agent(OrchestratorConfig::new("m").approval(ApprovalPolicy::Never));
    let summary = open.run_to_completion("go").await.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 1);
    assert!(summary.unapproved.is_empty());
    assert_eq!(summary.tool_calls[0].output.to_text(), "ran: ls");

    let echo_model = scripted()
        .reply_tool_call("c1", "echo", json!({"text": "hi"}))
        .reply(text("ok"));
    let strict = loop_agent(
        echo_model,
        OrchestratorConfig::new("m").approval(ApprovalPolicy::Always),
    )
    .tools(registry().list())
    .conversation();
    let summary = strict.run_to_completion("go").await.unwrap();
    assert_eq!(summary.unapproved.len(), 1, "{:?}", summary.unapproved);
    assert!(summary.unapproved[0].reason.contains("Always"));
}

#[tokio::test]
async fn without_a_policy_allow_always_is_remembered_as_a_session_rule() {
    let model = scripted()
        .reply(tool_calls(&[("c1", "Bash", json!({"command": "ls"}))]))
        .reply(tool_calls(&[("c2", "Bash", json!({"command": "ls"}))]))
        .reply(text("done"))
        .reply(tool_calls(&[("c3", "Bash", json!({"command": "ls"}))]))
        .reply(text("done again"));
    let shell = Shell::default();
    let registry = Registry::new();
    registry.register_typed(shell.clone()).unwrap();
    // No `permissions(...)`: the default policy (`Permissions::unset`) takes the answer, and
    // remembers it as a policy does: the narrowest rule, in the session scope.
    let agent = loop_agent(model, OrchestratorConfig::new("m"))
        .tools(registry.list())
        .conversation();
    let always = || {
        Some(Answer::AllowAlways {
            remember: Remember::exact(Scope::Session),
        })
    };
    let (events, outcome) = answer_approvals(agent.run("go").unwrap(), always).await;
    outcome.unwrap();
    let (more, outcome) = answer_approvals(agent.run("again").unwrap(), always).await;
    outcome.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 3);
    let asked: Vec<String> = labels(&events)
        .into_iter()
        .chain(labels(&more))
        .filter(|l| l.starts_with("approval_required") || l.starts_with("approved"))
        .collect();
    assert_eq!(asked, ["approval_required c1", "approved c1 always=true"]);
    assert_eq!(session_allow_rules(&agent), ["Bash(ls)"]);
}

/// The session scope's allow rules, as written.
fn session_allow_rules(agent: &Orchestrator) -> Vec<String> {
    let Some(scope) = agent.permissions().and_then(|p| p.scope(Scope::Session)) else {
        return Vec::new();
    };
    scope
        .read()
        .list(mux_permission::RuleKind::Allow)
        .iter()
        .map(|r| r.to_string())
        .collect()
}

fn asked(events: &[LoopEvent]) -> usize {
    labels(events)
        .iter()
        .filter(|l| l.starts_with("approval_required"))
        .count()
}

#[tokio::test]
async fn one_always_answer_adds_one_rule_and_later_runs_are_not_asked() {
    let model = scripted()
        .reply(tool_calls(&[(
            "c1",
            "Bash",
            json!({"command": "git diff"}),
        )]))
        .reply(text("done"))
        .reply(tool_calls(&[
            ("c2", "Bash", json!({"command": "git diff"})),
            ("c3", "Bash", json!({"command": "git diff"})),
        ]))
        .reply(text("done again"));
    let (agent, shell) = shell_agent(model, OrchestratorConfig::new("m"));
    let always = || {
        Some(Answer::AllowAlways {
            remember: Remember::exact(Scope::Session),
        })
    };
    let (first, outcome) = answer_approvals(agent.run("go").unwrap(), always).await;
    outcome.unwrap();
    assert_eq!(asked(&first), 1);
    assert_eq!(session_allow_rules(&agent), ["Bash(git diff)"]);
    // A later run of the same session: the rule answers, no one is asked, nothing is added.
    let refuse = || Some(Answer::deny("asked again"));
    let (second, outcome) = answer_approvals(agent.run("again").unwrap(), refuse).await;
    outcome.unwrap();
    assert_eq!(asked(&second), 0, "{:#?}", labels(&second));
    assert_eq!(shell.calls.load(Ordering::SeqCst), 3);
    assert_eq!(session_allow_rules(&agent), ["Bash(git diff)"]);
}

#[tokio::test]
async fn an_always_answer_to_a_forced_question_goes_to_the_same_rule_store() {
    // The tool's predicate asks whatever the rules say; the answer still becomes one rule of
    // the policy (the path PermissionGate::answered owns), not a second memory.
    let model = scripted()
        .reply(tool_calls(&[("c1", "Bash", json!({"command": "make"}))]))
        .reply(text("done"));
    let shell = Shell::default();
    let registry = Registry::new();
    registry.register_typed(shell.clone()).unwrap();
    let permissions = Permissions::builder(PathContext::new("."))
        .scope(Scope::Project, ScopeRules::new(RuleSet::new()))
        .build();
    let agent = loop_agent(model, OrchestratorConfig::new("m"))
        .tools(registry.list())
        .permissions(permissions)
        .needs_approval("Bash", |_| true)
        .conversation();
    let always = || {
        Some(Answer::AllowAlways {
            remember: Remember::exact(Scope::Session),
        })
    };
    let (events, outcome) = answer_approvals(agent.run("go").unwrap(), always).await;
    outcome.unwrap();
    assert_eq!(asked(&events), 1);
    assert_eq!(shell.calls.load(Ordering::SeqCst), 1);
    assert_eq!(session_allow_rules(&agent), ["Bash(make)"]);
}
