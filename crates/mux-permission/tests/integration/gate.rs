//! The gate inside mux-tool's executor, in front of a tool that really runs `sh -c`.

use std::sync::{Arc, Mutex};

use mux_permission::{
    Answer, PathContext, PermissionGate, Permissions, Remember, RuleSet, Scope, ScopeRules,
    asker_fn,
};
use mux_tool::hooks::pre_hook_fn;
use mux_tool::{
    CallScope, Executor, PreHookAction, Registry, Subject, ToolCall, ToolContext, ToolError,
    ToolOutput, TypedTool,
};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ShellArgs {
    command: String,
}

/// Runs its command with `sh -c` in a directory.
struct Shell {
    dir: std::path::PathBuf,
}

impl TypedTool for Shell {
    type Args = ShellArgs;
    const NAME: &'static str = "Bash";
    fn description(&self) -> String {
        "Runs a shell command".into()
    }
    fn subject(&self, args: &ShellArgs) -> Subject {
        Subject::command(&args.command)
    }
    async fn call(&self, args: ShellArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&args.command)
            .current_dir(&self.dir)
            .output()
            .map_err(ToolError::other)?;
        Ok(ToolOutput::text(
            String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        ))
    }
}

fn executor(dir: &std::path::Path, gate: PermissionGate, pre_approve: bool) -> Executor {
    let registry = Registry::new();
    registry
        .register_typed(Shell {
            dir: dir.to_owned(),
        })
        .unwrap();
    let mut builder = Executor::builder(registry).gate(gate);
    if pre_approve {
        builder = builder.pre_hook(pre_hook_fn("trusted", |_, _| PreHookAction::Allow));
    }
    builder.build()
}

fn permissions(dir: &std::path::Path) -> Permissions {
    let project = RuleSet::new()
        .with_allow("Bash(echo:*)")
        .unwrap()
        .with_deny("Bash(rm:*)")
        .unwrap();
    Permissions::builder(PathContext::with_home(dir, None))
        .scope(Scope::Project, ScopeRules::new(project))
        .build()
}

async fn run(executor: &Executor, id: &str, command: &str) -> (bool, String) {
    let outcome = executor
        .execute(
            ToolCall::new(id, "Bash", json!({"command": command})),
            &CallScope::default(),
        )
        .await;
    (outcome.is_error(), outcome.output().to_text())
}

#[tokio::test]
async fn allow_runs_deny_refuses_and_the_file_survives() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "x").unwrap();
    let asked = Arc::new(Mutex::new(0));
    let counter = asked.clone();
    let asker = asker_fn(move |_, _, _| {
        *counter.lock().unwrap() += 1;
        async {
            Answer::Deny {
                reason: "the human said no".into(),
            }
        }
    });
    let executor = executor(
        dir.path(),
        PermissionGate::new(permissions(dir.path()), asker),
        false,
    );

    assert_eq!(
        run(&executor, "1", "echo hello").await,
        (false, "hello".into())
    );
    let (is_error, text) = run(&executor, "2", "echo hi && rm keep.txt").await;
    assert!(is_error && text.contains("Bash(rm:*)"), "{text}");
    assert!(dir.path().join("keep.txt").exists());
    assert_eq!(*asked.lock().unwrap(), 0);

    let (is_error, text) = run(&executor, "3", "touch new.txt").await;
    assert!(is_error && text.contains("the human said no"), "{text}");
    assert!(!dir.path().join("new.txt").exists());
    assert_eq!(*asked.lock().unwrap(), 1);
}

#[tokio::test]
async fn always_allow_is_recorded_and_stops_the_asking() {
    let dir = tempfile::tempdir().unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let log = asked.clone();
    let asker = asker_fn(move |call, _, decision| {
        log.lock()
            .unwrap()
            .push((call.id.clone(), decision.reason.clone()));
        async {
            Answer::AllowAlways {
                remember: Remember::prefix(Scope::Session, "printf"),
            }
        }
    });
    let gate = PermissionGate::new(permissions(dir.path()), asker);
    let registry = Registry::new();
    registry
        .register_typed(Shell {
            dir: dir.path().to_owned(),
        })
        .unwrap();
    let gate = Arc::new(gate);
    let executor = Executor::builder(registry)
        .shared_gate(gate.clone())
        .build();

    assert_eq!(
        run(&executor, "1", "printf one").await,
        (false, "one".into())
    );
    assert_eq!(
        run(&executor, "2", "printf two").await,
        (false, "two".into())
    );
    assert_eq!(
        asked.lock().unwrap().len(),
        1,
        "asked once, then remembered"
    );
    let answers = gate.answers();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].call_id, "1");
    assert_eq!(
        answers[0].answer,
        Answer::AllowAlways {
            remember: Remember::prefix(Scope::Session, "printf")
        }
    );
    let session = gate
        .permissions()
        .scope(Scope::Session)
        .unwrap()
        .read()
        .allow
        .len();
    assert_eq!(session, 1);
}

#[tokio::test]
async fn pre_approved_calls_skip_asking_but_deny_rules_hold() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "x").unwrap();
    let asker = asker_fn(|_, _, _| async { panic!("a pre-approved call must not ask") });
    let executor = executor(
        dir.path(),
        PermissionGate::new(permissions(dir.path()), asker),
        true,
    );

    assert_eq!(
        run(&executor, "1", "printf pre").await,
        (false, "pre".into())
    );
    let (is_error, text) = run(&executor, "2", "rm keep.txt").await;
    assert!(is_error && text.contains("Bash(rm:*)"), "{text}");
    assert!(dir.path().join("keep.txt").exists());
}

#[tokio::test]
async fn without_an_asker_ask_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let executor = executor(
        dir.path(),
        PermissionGate::without_asker(permissions(dir.path())),
        false,
    );
    let (is_error, text) = run(&executor, "1", "touch x").await;
    assert!(is_error && text.contains("no one to ask"), "{text}");
    assert!(!dir.path().join("x").exists());
}

#[test]
fn answers_serialise_under_one_tag_and_read_the_tag_of_earlier_releases() {
    let always = Answer::AllowAlways {
        remember: Remember::prefix(Scope::Project, "git diff"),
    };
    let json = serde_json::to_value(&always).unwrap();
    assert_eq!(json["answer"], "allow_always");
    assert!(json.get("decision").is_none(), "{json}");
    assert_eq!(serde_json::from_value::<Answer>(json).unwrap(), always);
    let old = |value| serde_json::from_value::<Answer>(value);
    assert_eq!(
        old(json!({"decision": "allow_once"})).unwrap(),
        Answer::AllowOnce
    );
    assert_eq!(
        old(json!({"decision": "deny", "reason": "no"})).unwrap(),
        Answer::deny("no")
    );
    for bad in [
        json!({"answer": "allow_once", "decision": "allow_once"}),
        json!({"answer": "allow_always"}),
        json!({"answer": "deny"}),
        json!({"answer": "sometimes"}),
        json!({}),
    ] {
        assert!(old(bad.clone()).is_err(), "{bad}");
    }
}
