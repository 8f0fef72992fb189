//! One approval path: a hook's ask, a rule's ask and the tool's annotations all reach the face
//! the same way, and a deny of the rules or the mode holds whatever a hook or the tool says.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use mux_orchestrator::hooks::{Hook, HookError, PreToolAction};
use mux_orchestrator::{Answer, LoopEvent, Orchestrator, OrchestratorConfig};
use mux_permission::{Mode, PathContext, Permissions, RuleSet, Scope, ScopeRules};
use mux_tool::{
    BoxFuture, Tool, ToolAnnotations, ToolCall, ToolContext, ToolError, ToolOutput, ToolSpec,
};
use serde_json::{Value, json};

/// A tool that only counts its calls; read-only or not, as told.
struct Probe {
    spec: ToolSpec,
    calls: Arc<AtomicUsize>,
}

impl Probe {
    fn counted(name: &str, read_only: bool) -> (Arc<dyn Tool>, Arc<AtomicUsize>) {
        let mut spec = ToolSpec::new(name, "counts its calls", json!({"type": "object"})).unwrap();
        if read_only {
            spec = spec.with_annotations(ToolAnnotations::read_only());
        }
        let calls = Arc::new(AtomicUsize::new(0));
        let probe = Probe {
            spec,
            calls: Arc::clone(&calls),
        };
        (Arc::new(probe), calls)
    }
}

impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, _: Value, _: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(ToolOutput::text("ran")) })
    }
}

/// A pre-tool-use hook that says `action` about every call.
struct Says(PreToolAction);

impl Hook for Says {
    fn name(&self) -> &str {
        "says"
    }

    fn pre_tool_use<'a>(
        &'a self,
        _: &'a ToolCall,
    ) -> BoxFuture<'a, Result<PreToolAction, HookError>> {
        let action = self.0.clone();
        Box::pin(async move { Ok(action) })
    }
}

/// A policy with `rules` in its project scope.
fn policy(rules: RuleSet) -> Permissions {
    Permissions::builder(PathContext::new("."))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build()
}

/// Runs one call of `tool` on `agent`, answering every question "allow once"; the reasons
/// the face was asked with, and whether the call was approved and ran.
async fn one_call(agent: &Orchestrator, tool: &str) -> (Vec<String>, Vec<String>) {
    let (events, outcome) = answer_approvals(agent.run(format!("call {tool}")).unwrap(), || {
        Some(Answer::AllowOnce)
    })
    .await;
    outcome.unwrap();
    let reasons = events
        .iter()
        .filter_map(|event| match event {
            LoopEvent::ApprovalRequired { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    let path = labels(&events)
        .into_iter()
        .filter(|l| {
            [
                "approval_required",
                "approved",
                "executing",
                "denied",
                "result",
            ]
            .iter()
            .any(|kind| l.starts_with(kind))
        })
        .collect();
    (reasons, path)
}

/// What every question answered "allow once" goes through, whoever asked it.
const ASKED_AND_RAN: [&str; 4] = [
    "approval_required c1",
    "approved c1 always=false",
    "executing c1",
    "result c1 error=false \"ran\"",
];

#[tokio::test]
async fn a_hooks_ask_a_rules_ask_and_the_annotations_ask_all_reach_the_face_one_way() {
    let script = |tool: &str| {
        scripted()
            .reply_tool_call("c1", tool, json!({}))
            .reply(text("done"))
    };

    // A hook asks about a read-only tool the policy would run unasked.
    let (look, looked) = Probe::counted("look", true);
    let agent = loop_agent(script("look"), OrchestratorConfig::new("m"))
        .tools([look])
        .hook(Says(PreToolAction::Ask))
        .conversation();
    let (reasons, path) = one_call(&agent, "look").await;
    assert_eq!(
        reasons,
        ["the pre-tool-use hook `pre_tool_use` asked for approval"]
    );
    assert_eq!(path, ASKED_AND_RAN);
    assert_eq!(looked.load(Ordering::SeqCst), 1);

    // A rule asks about a read-only tool the mode would run unasked.
    let (look, looked) = Probe::counted("look", true);
    let agent = loop_agent(script("look"), OrchestratorConfig::new("m"))
        .tools([look])
        .permissions(policy(RuleSet::new().with_ask("look").unwrap()))
        .conversation();
    let (reasons, path) = one_call(&agent, "look").await;
    assert_eq!(reasons, ["the rule `look` asks"]);
    assert_eq!(path, ASKED_AND_RAN);
    assert_eq!(looked.load(Ordering::SeqCst), 1);

    // No hook, no rule: the annotations decide. The same tool, read-only, runs unasked;
    // not read-only, it is asked about.
    for (read_only, asked) in [(true, false), (false, true)] {
        let (poke, poked) = Probe::counted("poke", read_only);
        let agent = loop_agent(script("poke"), OrchestratorConfig::new("m"))
            .tools([poke])
            .conversation();
        let (reasons, path) = one_call(&agent, "poke").await;
        if asked {
            assert_eq!(
                reasons,
                ["the tool is not read-only and no permission policy is set"]
            );
            assert_eq!(path, ASKED_AND_RAN);
        } else {
            assert!(reasons.is_empty(), "{reasons:?}");
            assert_eq!(path, ASKED_AND_RAN[2..]);
        }
        assert_eq!(poked.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn a_deny_of_the_rules_or_the_mode_holds_whatever_a_hook_or_the_tool_says() {
    let script = || {
        scripted()
            .reply_tool_call("c1", "poke", json!({}))
            .reply(text("done"))
    };
    let deny = || policy(RuleSet::new().with_deny("poke").unwrap());
    // The hook allows, or asks; the tool's predicate says no approval is needed, or asks.
    let hooks = [
        PreToolAction::Allow,
        PreToolAction::Ask,
        PreToolAction::Continue,
    ];
    for hook in hooks {
        for predicate in [false, true] {
            let (poke, poked) = Probe::counted("poke", true);
            let agent = loop_agent(script(), OrchestratorConfig::new("m"))
                .tools([poke])
                .permissions(deny())
                .hook(Says(hook.clone()))
                .needs_approval("poke", move |_| predicate)
                .conversation();
            let (reasons, path) = one_call(&agent, "poke").await;
            let case = format!("hook {hook:?}, predicate {predicate}");
            assert!(
                reasons.is_empty(),
                "{case}: the face was asked: {reasons:?}"
            );
            assert_eq!(
                path,
                [
                    "denied c1 \"denied by the rule `poke`\"",
                    "result c1 error=true \"permission to run tool `poke` was denied: denied by the rule `poke`\""
                ],
                "{case}"
            );
            assert_eq!(poked.load(Ordering::SeqCst), 0, "{case}");
        }
    }
}

/// With no policy set, a `needs_approval` predicate's "no" runs a call the policy would ask
/// about, and never one its rules or mode refuse: plan mode, set by a face on the default
/// policy, refuses a tool that is not read-only, and a deny rule of the session holds.
#[tokio::test]
async fn a_predicates_no_does_not_open_what_the_default_policy_refuses() {
    let script = || {
        scripted()
            .reply_tool_call("c1", "poke", json!({}))
            .reply(text("done"))
    };
    let agent = |calls: &mut Option<Arc<AtomicUsize>>| {
        let (poke, poked) = Probe::counted("poke", false);
        *calls = Some(poked);
        loop_agent(script(), OrchestratorConfig::new("m"))
            .tools([poke])
            .needs_approval("poke", |_| false)
            .conversation()
    };
    let mut calls = None;

    // The predicate's "no" answers the default policy's ask: the call runs unasked.
    let open = agent(&mut calls);
    let (reasons, path) = one_call(&open, "poke").await;
    assert!(reasons.is_empty(), "{reasons:?}");
    assert_eq!(path, ASKED_AND_RAN[2..]);
    assert_eq!(calls.take().unwrap().load(Ordering::SeqCst), 1);

    // Plan mode on the same default policy: refused.
    let planning = agent(&mut calls);
    let session = planning
        .permissions()
        .unwrap()
        .scope(Scope::Session)
        .unwrap();
    session.set_mode(Some(Mode::Plan));
    let (reasons, path) = one_call(&planning, "poke").await;
    assert!(reasons.is_empty(), "{reasons:?}");
    assert!(path[0].starts_with("denied c1"), "{path:?}");
    assert!(path[0].contains("plan mode"), "{path:?}");
    assert_eq!(calls.take().unwrap().load(Ordering::SeqCst), 0);

    // A deny rule the session added ("reject always"): refused.
    let rejecting = agent(&mut calls);
    let session = rejecting
        .permissions()
        .unwrap()
        .scope(Scope::Session)
        .unwrap();
    session.update(|rules| {
        let rule = mux_permission::Rule::parse("poke").unwrap();
        rules.add(mux_permission::RuleKind::Deny, rule)
    });
    let (reasons, path) = one_call(&rejecting, "poke").await;
    assert!(reasons.is_empty(), "{reasons:?}");
    assert_eq!(
        path[0], "denied c1 \"denied by the rule `poke`\"",
        "{path:?}"
    );
    assert_eq!(calls.take().unwrap().load(Ordering::SeqCst), 0);
}
