//! Issue 40, class 3: an option the model said takes the next word, where the real program
//! takes none (or takes it only attached). The model swallowed a following `--output=F` (or
//! `--paginate`) as the option's value and allowed the command; the program read it as an
//! option of its own and wrote F (or ran `pr`).
//!
//! Each case is run twice: analysed under the one prefix rule it is written for, and run for
//! real (the same words, no shell) in a throwaway git repository. The test checks that the
//! attack still works on the installed program (so the case means something) and that the
//! analysis no longer allows it.

use std::path::Path;
use std::process::{Command, Stdio};

use mux_permission::{PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict, builtin};
use mux_tool::Subject;

/// What the real run is seen to do.
#[derive(Clone, Copy, Debug)]
enum Effect {
    /// The tracked file `tracked.txt` no longer holds what was committed.
    Overwrites,
    /// The output went through `pr` (its page header), a program the analysis never vouched
    /// for.
    RunsPr,
}

/// The prefix rule, the command's words, and what the real program does with them.
const CASES: &[(&str, &[&str], Effect)] = &[
    // git diff: `-U`/`--unified` take an optional, attached value only.
    (
        "Bash(git diff:*)",
        &["git", "diff", "-U", "--output=tracked.txt"],
        Effect::Overwrites,
    ),
    (
        "Bash(git diff:*)",
        &["git", "diff", "--unified", "--output=tracked.txt"],
        Effect::Overwrites,
    ),
    // git log: `--format`, `--min-parents`, `--max-parents` take a value only after `=`.
    (
        "Bash(git log:*)",
        &["git", "log", "--format", "--output=tracked.txt"],
        Effect::Overwrites,
    ),
    (
        "Bash(git log:*)",
        &["git", "log", "--min-parents", "--output=tracked.txt"],
        Effect::Overwrites,
    ),
    (
        "Bash(git log:*)",
        &["git", "log", "--max-parents", "--output=tracked.txt"],
        Effect::Overwrites,
    ),
    (
        "Bash(git show:*)",
        &["git", "show", "--format", "--output=tracked.txt"],
        Effect::Overwrites,
    ),
    // git's revision parser takes no abbreviations: `--grep-r` is not `--grep-reflog`.
    (
        "Bash(git log:*)",
        &["git", "log", "--grep-r", "--output=tracked.txt"],
        Effect::Overwrites,
    ),
    // Nor clusters mixing its own letters with the diff options': `-pn` is not `-p -n`.
    (
        "Bash(git log:*)",
        &["git", "log", "-pn", "--output=tracked.txt"],
        Effect::Overwrites,
    ),
    // git blame: `--reverse` is a flag (the range is the revision operand).
    (
        "Bash(git blame:*)",
        &[
            "git",
            "blame",
            "--reverse",
            "--output=tracked.txt",
            "tracked.txt",
        ],
        Effect::Overwrites,
    ),
    // GNU diff: `--context[=NUM]` and `--unified[=NUM]` take an optional, attached value.
    (
        "Bash(diff:*)",
        &["diff", "--context", "--paginate", "a.txt", "b.txt"],
        Effect::RunsPr,
    ),
    (
        "Bash(diff:*)",
        &["diff", "--unified", "--paginate", "a.txt", "b.txt"],
        Effect::RunsPr,
    ),
];

const COMMITTED: &str = "committed\n";

fn git(repo: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(repo)
        .envs(quiet_git_env(repo))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// No user or system configuration reaches the throwaway repository.
fn quiet_git_env(home: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("HOME", home.display().to_string()),
        ("GIT_CONFIG_NOSYSTEM", "1".to_owned()),
        ("GIT_CONFIG_GLOBAL", "/dev/null".to_owned()),
        ("GIT_PAGER", "cat".to_owned()),
        ("PAGER", "cat".to_owned()),
        ("LC_ALL", "C".to_owned()),
    ]
}

/// A repository with `tracked.txt` committed, then changed, and two files to compare.
fn repository(root: &Path) {
    git(root, &["init", "-q"]);
    std::fs::write(root.join("tracked.txt"), COMMITTED).unwrap();
    git(root, &["add", "tracked.txt"]);
    git(
        root,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "one",
        ],
    );
    std::fs::write(root.join("tracked.txt"), "committed\nchanged\n").unwrap();
    std::fs::write(root.join("a.txt"), "a\n").unwrap();
    std::fs::write(root.join("b.txt"), "b\n").unwrap();
}

/// Runs the words for real in a fresh repository; whether the effect was seen.
fn happens(words: &[&str], effect: Effect) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    repository(root);
    let before = std::fs::read_to_string(root.join("tracked.txt")).unwrap();
    let output = Command::new(words[0])
        .args(&words[1..])
        .current_dir(root)
        .envs(quiet_git_env(root))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    match effect {
        Effect::Overwrites => std::fs::read_to_string(root.join("tracked.txt")).unwrap() != before,
        Effect::RunsPr => String::from_utf8_lossy(&output.stdout).contains("Page 1"),
    }
}

fn verdict(rule: &str, command: &str) -> Verdict {
    let rules = RuleSet::new().with_allow(rule).unwrap();
    let permissions = Permissions::builder(PathContext::new("/nonexistent/project"))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build();
    permissions
        .check(&builtin::spec("Bash").unwrap(), &Subject::command(command))
        .verdict
}

fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn an_option_never_swallows_a_word_the_program_reads_as_an_option() {
    // git and GNU diff are on every machine the project builds on; a missing one is a broken
    // machine, not a reason to pass.
    assert!(
        installed("git") && installed("diff"),
        "git and diff must be installed"
    );
    let mut unsafe_allows = Vec::new();
    for (rule, words, effect) in CASES {
        assert!(
            words.iter().all(|w| w
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-=._".contains(c))),
            "the words need no quoting, so the string analysed is the argv run"
        );
        let command = words.join(" ");
        assert!(
            happens(words, *effect),
            "`{command}` no longer shows {effect:?} on the installed program: the case is moot"
        );
        let verdict = verdict(rule, &command);
        if verdict == Verdict::Allow {
            unsafe_allows.push(format!("{rule}: `{command}` ({effect:?})"));
        }
    }
    assert!(
        unsafe_allows.is_empty(),
        "allowed, though the program did what no rule vouched for:\n{}",
        unsafe_allows.join("\n")
    );
}
