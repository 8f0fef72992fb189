//! The wall replaces the prompt for `bash` (`autoAllowBashIfSandboxed`), deny and ask rules
//! still hold, and commands that leave the wall ask or are refused.

use mux_permission::Outside;
use mux_permission::sandbox::{DANGEROUSLY_DISABLE_SANDBOX, SandboxSettings};
use mux_permission::{
    GateVerdict, Mode, PathContext, PermissionGate, Permissions, RuleSet, Scope, ScopeRules,
    Verdict, builtin,
};
use mux_tool::builtin::{Sandbox, SandboxPolicy};
use mux_tool::{CallScope, Executor, Registry, Subject, ToolCall, ToolSpec, Typed};
use proptest::prelude::*;
use serde_json::{Value, json};

const AUTO: &str = "allowed: the OS sandbox bounds it (autoAllowBashIfSandboxed)";

/// The spec of mux's own `bash` tool.
fn bash_spec() -> ToolSpec {
    let dir = std::env::temp_dir();
    let bash = mux_tool::builtin::Bash::new(Sandbox::new(dir).unwrap());
    mux_tool::Tool::spec(&Typed::new(bash).unwrap()).clone()
}

fn rules() -> RuleSet {
    RuleSet::new()
        .with_allow("Bash(git status)")
        .unwrap()
        .with_allow("Bash(docker ps)")
        .unwrap()
        .with_ask("Bash(git push:*)")
        .unwrap()
        .with_deny("Bash(rm:*)")
        .unwrap()
}

fn sandbox(change: impl FnOnce(&mut SandboxSettings)) -> SandboxSettings {
    let mut settings = SandboxSettings::new();
    change(&mut settings);
    settings
}

fn policy(wall: Option<SandboxPolicy>, settings: SandboxSettings, mode: Mode) -> Permissions {
    let project = ScopeRules::new(rules().with_sandbox(settings).with_mode(mode));
    let builder = Permissions::builder(PathContext::with_home("/nonexistent/p", None))
        .scope(Scope::Project, project);
    match wall {
        Some(policy) => builder.bash_wall(policy),
        None => builder,
    }
    .build()
}

fn walled(mode: Mode) -> Permissions {
    policy(
        Some(SandboxPolicy::WorkspaceWrite),
        SandboxSettings::new(),
        mode,
    )
}

fn check(permissions: &Permissions, command: &str) -> GateVerdict {
    permissions.check(&bash_spec(), &Subject::command(command))
}

fn check_input(permissions: &Permissions, input: Value) -> GateVerdict {
    let command = input["command"].as_str().unwrap_or_default().to_owned();
    permissions.check_call(&bash_spec(), &Subject::command(command), &input)
}

/// Commands the analysis asks about, each for a different reason.
const ASKING: [&str; 4] = [
    "curl https://example.com",
    "git status && npm install",
    "python3 -c 'print(1)'",
    "*.sh",
];

#[test]
fn an_ask_becomes_allow_under_the_wall_with_the_reason_shown() {
    let unwalled = policy(None, SandboxSettings::new(), Mode::Default);
    let walled = walled(Mode::Default);
    for command in ASKING {
        assert_eq!(check(&unwalled, command).verdict, Verdict::Ask, "{command}");
        let verdict = check(&walled, command);
        assert_eq!(verdict.verdict, Verdict::Allow, "{command}: {verdict:?}");
        assert!(verdict.reason.starts_with(AUTO), "{}", verdict.reason);
        assert!(!verdict.unsandboxed);
    }
    // An allow rule still decides with its own reason.
    let verdict = check(&walled, "git status");
    assert_eq!(verdict.rule.as_deref(), Some("Bash(git status)"));
}

#[test]
fn deny_rules_hold_in_every_mode_under_the_wall() {
    for mode in Mode::ALL {
        let permissions = walled(mode);
        for command in [
            "rm -rf build",
            "git status && rm -rf ~",
            "echo $(rm -rf ~)",
            "ls | xargs rm",
            "FOO=1 rm x",
        ] {
            let verdict = check(&permissions, command);
            assert_eq!(
                verdict.verdict,
                Verdict::Deny,
                "{mode} {command}: {verdict:?}"
            );
        }
    }
}

#[test]
fn explicit_ask_rules_still_ask() {
    let verdict = check(&walled(Mode::Default), "git push origin main");
    assert_eq!(verdict.verdict, Verdict::Ask);
    assert_eq!(verdict.rule.as_deref(), Some("Bash(git push:*)"));
    // Where no one can be asked, it is refused, as without the wall.
    let verdict = check(&walled(Mode::DontAsk), "git status && git push");
    assert_eq!(verdict.verdict, Verdict::Deny);
}

#[test]
fn auto_allow_works_whatever_the_mode_but_plan() {
    for mode in [
        Mode::Default,
        Mode::AcceptEdits,
        Mode::DontAsk,
        Mode::Bypass,
    ] {
        let verdict = check(&walled(mode), "npm install");
        assert_eq!(verdict.verdict, Verdict::Allow, "{mode}: {verdict:?}");
    }
    assert_eq!(
        check(&walled(Mode::Plan), "npm install").verdict,
        Verdict::Deny
    );
}

#[test]
fn an_excluded_command_runs_outside_and_is_not_allowed_by_the_wall() {
    let settings = || sandbox(|s| s.excluded_commands = vec!["docker:*".into()]);
    let permissions = policy(
        Some(SandboxPolicy::WorkspaceWrite),
        settings(),
        Mode::Default,
    );
    for command in [
        "docker run -it alpine",
        "echo hi && docker images",
        "sudo /usr/bin/docker info",
        "ls $(docker ps -q)",
    ] {
        let verdict = check(&permissions, command);
        assert_eq!(verdict.verdict, Verdict::Ask, "{command}: {verdict:?}");
        assert!(verdict.unsandboxed, "{command}");
        assert!(
            verdict.reason.contains("excludedCommands"),
            "{}",
            verdict.reason
        );
        assert_eq!(
            permissions.outside_wall(command, false),
            Some(Outside::Excluded("docker:*".into()))
        );
    }
    // It asks even where an allow rule covers it, in every mode that can ask: no settings
    // file lets a command leave the wall unseen.
    for mode in [Mode::Default, Mode::AcceptEdits, Mode::Bypass] {
        let permissions = policy(Some(SandboxPolicy::WorkspaceWrite), settings(), mode);
        let verdict = check(&permissions, "docker ps");
        assert_eq!(verdict.verdict, Verdict::Ask, "{mode}");
        assert!(verdict.unsandboxed);
    }
    let dont_ask = policy(
        Some(SandboxPolicy::WorkspaceWrite),
        settings(),
        Mode::DontAsk,
    );
    assert!(check(&dont_ask, "docker ps").is_deny());
    // Another command stays inside and is allowed by the wall.
    let verdict = check(&permissions, "npm install");
    assert!(verdict.is_allow() && !verdict.unsandboxed);
    assert_eq!(permissions.outside_wall("npm install", false), None);
}

#[test]
fn an_excluded_command_is_refused_when_unsandboxed_commands_are_not_allowed() {
    let settings = || {
        sandbox(|s| {
            s.excluded_commands = vec!["docker:*".into()];
            s.allow_unsandboxed_commands = Some(false);
        })
    };
    for mode in Mode::ALL {
        let permissions = policy(Some(SandboxPolicy::WorkspaceWrite), settings(), mode);
        for command in ["docker ps", "docker run alpine", "echo && docker ps"] {
            let verdict = check(&permissions, command);
            assert_eq!(verdict.verdict, Verdict::Deny, "{mode} {command}");
            assert!(
                verdict.reason.contains("allowUnsandboxedCommands is false"),
                "{}",
                verdict.reason
            );
        }
        // Commands inside the wall are not affected.
        if mode != Mode::Plan {
            assert!(check(&permissions, "npm test").is_allow(), "{mode}");
        }
    }
}

#[test]
fn a_request_to_leave_the_wall_asks_in_every_mode_or_is_refused() {
    let request = |command: &str| json!({"command": command, DANGEROUSLY_DISABLE_SANDBOX: true});
    for mode in [Mode::Default, Mode::AcceptEdits, Mode::Bypass] {
        let permissions = walled(mode);
        // Even a command an allow rule covers asks once it leaves the wall.
        for command in ["git status", "npm install"] {
            let verdict = check_input(&permissions, request(command));
            assert_eq!(
                verdict.verdict,
                Verdict::Ask,
                "{mode} {command}: {verdict:?}"
            );
            assert!(verdict.unsandboxed);
        }
    }
    let verdict = check_input(&walled(Mode::DontAsk), request("git status"));
    assert_eq!(verdict.verdict, Verdict::Deny);
    // The flag set to false, or absent, changes nothing; any other value counts as a request.
    let permissions = walled(Mode::Default);
    let off = json!({"command": "npm install", DANGEROUSLY_DISABLE_SANDBOX: false});
    assert!(check_input(&permissions, off).is_allow());
    let odd = json!({"command": "npm install", DANGEROUSLY_DISABLE_SANDBOX: "yes"});
    assert!(check_input(&permissions, odd).is_ask());
    // Deny rules come first.
    assert!(check_input(&permissions, request("rm -rf x")).is_deny());
    // Refused outright where unsandboxed commands are not allowed.
    let strict = policy(
        Some(SandboxPolicy::WorkspaceWrite),
        sandbox(|s| s.allow_unsandboxed_commands = Some(false)),
        Mode::Bypass,
    );
    let verdict = check_input(&strict, request("git status"));
    assert_eq!(verdict.verdict, Verdict::Deny);
    assert!(verdict.reason.contains(DANGEROUSLY_DISABLE_SANDBOX));
}

#[test]
fn without_the_wall_commands_ask_as_before() {
    let strict = || {
        sandbox(|s| {
            s.excluded_commands = vec!["docker:*".into()];
            s.allow_unsandboxed_commands = Some(false);
        })
    };
    let off = [
        ("no wall declared", policy(None, strict(), Mode::Default)),
        (
            "full access",
            policy(Some(SandboxPolicy::FullAccess), strict(), Mode::Default),
        ),
        (
            "enabled: false",
            policy(
                Some(SandboxPolicy::WorkspaceWrite),
                sandbox(|s| {
                    s.enabled = Some(false);
                    s.excluded_commands = vec!["docker:*".into()];
                    s.allow_unsandboxed_commands = Some(false);
                }),
                Mode::Default,
            ),
        ),
    ];
    for (why, permissions) in off {
        assert!(!permissions.sandboxed(), "{why}");
        for command in ASKING {
            assert_eq!(
                check(&permissions, command).verdict,
                Verdict::Ask,
                "{why} {command}"
            );
        }
        // The sandbox settings about leaving the wall are dormant.
        let verdict = check(&permissions, "docker run alpine");
        assert_eq!(verdict.verdict, Verdict::Ask, "{why}");
        assert!(!verdict.unsandboxed);
        assert_eq!(permissions.outside_wall("docker run alpine", false), None);
    }
    // The wall is up, and autoAllowBashIfSandboxed is off: the prompt stays.
    let manual = policy(
        Some(SandboxPolicy::WorkspaceWrite),
        sandbox(|s| s.auto_allow_bash_if_sandboxed = Some(false)),
        Mode::Default,
    );
    assert!(manual.sandboxed());
    for command in ASKING {
        assert_eq!(check(&manual, command).verdict, Verdict::Ask, "{command}");
    }
}

#[test]
fn settings_can_put_the_wall_up_but_never_take_it_down() {
    let on = sandbox(|s| s.enabled = Some(true));
    let from_settings = policy(None, on.clone(), Mode::Default);
    assert!(from_settings.sandboxed());
    assert_eq!(from_settings.bash_policy(), SandboxPolicy::WorkspaceWrite);
    let raised = policy(Some(SandboxPolicy::FullAccess), on, Mode::Default);
    assert!(raised.sandboxed());
    assert_eq!(raised.bash_policy(), SandboxPolicy::WorkspaceWrite);
    let kept = policy(
        Some(SandboxPolicy::ReadOnly),
        sandbox(|s| s.enabled = Some(false)),
        Mode::Default,
    );
    assert!(!kept.sandboxed());
    assert_eq!(kept.bash_policy(), SandboxPolicy::ReadOnly);
    // A new session keeps the wall.
    assert!(
        walled(Mode::Default)
            .new_session_at("/nonexistent/q")
            .sandboxed()
    );
    assert!(!Permissions::unset("/nonexistent/q").sandboxed());
}

#[test]
fn only_the_walled_bash_tool_is_allowed_by_the_wall() {
    // An application's own shell tool is not under mux's wall.
    let other = builtin::spec("Bash").unwrap();
    let verdict = walled(Mode::Default).check(&other, &Subject::command("npm install"));
    assert_eq!(verdict.verdict, Verdict::Ask);
}

/// A temp dir holding an empty `project` folder: (the dir, the project).
fn project() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    std::fs::create_dir(&root).unwrap();
    (dir, root)
}

/// A registry holding the bash tool `permissions` builds over `root`.
fn walled_bash(permissions: &Permissions, root: &std::path::Path) -> Registry {
    let registry = Registry::new();
    registry
        .register_typed(permissions.bash(Sandbox::new(root).unwrap()).unwrap())
        .unwrap();
    registry
}

/// Calls the tool `bash` with `input` through `executor`: (is it an error, its text).
async fn bash_call(executor: &Executor, id: &'static str, input: Value) -> (bool, String) {
    let outcome = executor
        .execute(ToolCall::new(id, "bash", input), &CallScope::default())
        .await;
    (outcome.is_error(), outcome.output().to_text())
}

/// Whether `text` says this machine cannot enforce the OS sandbox (the test is then skipped,
/// and says so).
fn cannot_wall(text: &str) -> bool {
    let cannot = text.contains("unsupported") || text.contains("Unsupported");
    if cannot {
        eprintln!("skipped: this machine cannot enforce the OS sandbox: {text}");
    }
    cannot
}

/// The bash tool the policy builds runs under the policy's own wall: a command the gate lets
/// through without asking really runs, and writes only where the wall lets it.
#[tokio::test]
async fn the_policy_builds_the_tool_it_judges() {
    let (dir, root) = project();
    let outside = dir.path().join("outside.txt");
    let permissions = Permissions::builder(PathContext::with_home(&root, None))
        .bash_wall(SandboxPolicy::WorkspaceWrite)
        .build();
    let registry = walled_bash(&permissions, &root);
    // No one to ask: only what the policy allows runs.
    let executor = Executor::builder(registry)
        .gate(PermissionGate::without_asker(permissions))
        .build();
    let run = |id: &'static str, input: Value| bash_call(&executor, id, input);
    let command = format!("echo inside > inside.txt; echo out > {}", outside.display());
    let (is_error, text) = run("1", json!({ "command": command })).await;
    if cannot_wall(&text) {
        return;
    }
    // Allowed unasked; the write inside the root happened, the one outside did not.
    assert!(is_error, "{text}");
    assert!(!text.contains("no one to ask"), "{text}");
    assert_eq!(
        std::fs::read_to_string(root.join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(!outside.exists());
}

/// A command that leaves the wall is asked about, and once allowed runs outside it: what the
/// wall refuses (a write outside the root) then happens. Through the flag too; without an
/// exclusion or the flag, the same write is refused by the wall.
#[tokio::test]
async fn an_excluded_command_asks_and_runs_outside_the_wall() {
    let (dir, root) = project();
    let settings = sandbox(|s| s.excluded_commands = vec!["touch".into()]);
    let project = ScopeRules::new(RuleSet::new().with_sandbox(settings));
    let permissions = Permissions::builder(PathContext::with_home(&root, None))
        .scope(Scope::Project, project)
        .bash_wall(SandboxPolicy::WorkspaceWrite)
        .build();
    let registry = walled_bash(&permissions, &root);
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&asked);
    let asker = mux_permission::asker_fn(move |call: ToolCall, _subject, _verdict| {
        seen.lock().unwrap().push(call.input["command"].clone());
        async { mux_permission::Answer::AllowOnce }
    });
    let executor = Executor::builder(registry)
        .gate(PermissionGate::new(permissions, asker))
        .build();
    let run = |id: &'static str, input: Value| bash_call(&executor, id, input);
    let walled = dir.path().join("walled.txt");
    let (_, text) = run(
        "1",
        json!({"command": format!("echo x > {}", walled.display())}),
    )
    .await;
    if cannot_wall(&text) {
        return;
    }
    assert!(
        !walled.exists(),
        "the wall let a write outside the root: {text}"
    );
    let excluded = dir.path().join("excluded.txt");
    let (is_error, text) = run(
        "2",
        json!({"command": format!("touch {}", excluded.display())}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(
        excluded.exists(),
        "the excluded command ran inside the wall: {text}"
    );
    let flagged = dir.path().join("flagged.txt");
    let (is_error, text) = run(
        "3",
        json!({"command": format!("echo y > {}", flagged.display()), DANGEROUSLY_DISABLE_SANDBOX: true}),
    )
    .await;
    assert!(!is_error, "{text}");
    assert!(
        flagged.exists(),
        "the flagged command ran inside the wall: {text}"
    );
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 2, "{asked:?}");
}

const WORDS: &[&str] = &[
    "git", "status", "push", "diff", "ls", "-la", "rm", "-rf", "echo", "cat", "npm", "install",
    "$(id)", "`id`", "$HOME", "*.txt", "sudo", "sh", "-c", "x", "FOO=1", "> out", "2>&1", "curl",
    "docker", "ps", "xargs", "eval", "'a b'",
];
const OPERATORS: &[&str] = &[" && ", " || ", "; ", " | ", "\n"];

fn command() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(WORDS),
            prop::collection::vec(prop::sample::select(WORDS), 0..4),
            prop::sample::select(OPERATORS),
        ),
        1..4,
    )
    .prop_map(|parts| {
        let mut out = String::new();
        for (index, (name, args, op)) in parts.iter().enumerate() {
            if index > 0 {
                out.push_str(op);
            }
            out.push_str(name);
            for arg in args {
                out.push(' ');
                out.push_str(arg);
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The wall only ever turns the analysis' own doubt into allow: a rule's deny or ask, and
    /// every deny, stand as they were; what it allows that was not allowed says why.
    #[test]
    fn the_wall_changes_only_what_would_ask(command in command(), mode_index in 0..5usize) {
        let mode = Mode::ALL[mode_index];
        let without = check(&policy(None, SandboxSettings::new(), mode), &command);
        let with = check(&walled(mode), &command);
        prop_assert!(!with.unsandboxed);
        if without.verdict == Verdict::Deny && without.rule.is_some() {
            prop_assert_eq!(&with, &without);
        }
        if without.verdict == Verdict::Ask && without.rule.is_some() {
            prop_assert_eq!(&with, &without);
        }
        if without.verdict == Verdict::Allow {
            prop_assert_eq!(with.verdict, Verdict::Allow);
        }
        if with.verdict != without.verdict {
            prop_assert_eq!(with.verdict, Verdict::Allow);
            prop_assert!(with.reason.starts_with(AUTO), "{}", with.reason);
            prop_assert!(mode != Mode::Plan);
        }
    }

    /// A command with an excluded command anywhere in it is never allowed by the wall, and
    /// is refused in every mode once unsandboxed commands are not allowed.
    #[test]
    fn excluded_commands_never_ride_the_wall(command in command(), mode_index in 0..5usize) {
        let mode = Mode::ALL[mode_index];
        let excluded = || sandbox(|s| s.excluded_commands = vec!["docker".into(), "eval".into()]);
        let permissions = policy(Some(SandboxPolicy::WorkspaceWrite), excluded(), mode);
        let verdict = check(&permissions, &command);
        if verdict.unsandboxed {
            prop_assert!(!verdict.reason.starts_with(AUTO), "{}", verdict.reason);
            prop_assert!(!verdict.is_allow(), "{:?}", verdict);
            let mut strict = excluded();
            strict.allow_unsandboxed_commands = Some(false);
            let strict = policy(Some(SandboxPolicy::WorkspaceWrite), strict, mode);
            prop_assert_eq!(check(&strict, &command).verdict, Verdict::Deny);
        }
        if !command.contains("docker") && !command.contains("eval") {
            prop_assert!(!verdict.unsandboxed);
        }
        if command.starts_with("docker") || command.starts_with("eval") {
            prop_assert!(verdict.unsandboxed || verdict.is_deny(), "{:?}", verdict);
        }
    }
}

/// A stand-in for a `bash` that takes Claude Code's `dangerouslyDisableSandbox` flag: the
/// gate reads the flag from the call's input.
struct FlaggedBash {
    ran: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(non_snake_case, dead_code)]
struct FlaggedArgs {
    command: String,
    dangerouslyDisableSandbox: Option<bool>,
}

impl mux_tool::TypedTool for FlaggedBash {
    type Args = FlaggedArgs;
    const NAME: &'static str = "bash";
    fn description(&self) -> String {
        "Runs a shell command".into()
    }
    fn subject(&self, args: &FlaggedArgs) -> Subject {
        Subject::command(&args.command)
    }
    async fn call(
        &self,
        args: FlaggedArgs,
        _cx: mux_tool::ToolContext,
    ) -> Result<mux_tool::ToolOutput, mux_tool::ToolError> {
        self.ran.lock().unwrap().push(args.command);
        Ok(mux_tool::ToolOutput::text("ran"))
    }
}

#[tokio::test]
async fn the_gate_reads_the_request_to_leave_the_wall_from_the_call() {
    let ran = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let registry = Registry::new();
    registry
        .register_typed(FlaggedBash { ran: ran.clone() })
        .unwrap();
    let executor = Executor::builder(registry)
        .gate(PermissionGate::without_asker(walled(Mode::Default)))
        .build();
    let run = |id: &'static str, input: Value| bash_call(&executor, id, input);
    let (is_error, _) = run("1", json!({"command": "npm install"})).await;
    assert!(!is_error);
    let (is_error, text) = run(
        "2",
        json!({"command": "npm install", DANGEROUSLY_DISABLE_SANDBOX: true}),
    )
    .await;
    assert!(
        is_error && text.contains(DANGEROUSLY_DISABLE_SANDBOX),
        "{text}"
    );
    assert_eq!(*ran.lock().unwrap(), ["npm install"]);
}
