//! Property: a command a prefix rule allows stops being allowed when any word its program's
//! model does not explain joins it: an unknown option (spelled or abbreviated nowhere in the
//! model), an option that runs code or writes files, or one operand more than the program
//! takes. Wherever the word goes (the end, or right after the program or subcommand), the
//! verdict is never allow. The strings are only analysed, never run.

use std::sync::LazyLock;

use mux_permission::{PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict, builtin};
use mux_tool::Subject;
use proptest::prelude::*;

/// Commands the rules below allow, each split where an extra word may go: after the head,
/// or at the end.
const ALLOWED: &[(&str, &str)] = &[
    ("git config", "user.email"),
    ("git config", "--get user.email"),
    ("git stash show", "-p"),
    ("git shortlog", "-sn"),
    ("git rev-list", "--count HEAD"),
    ("git reflog", "-5"),
    ("git log", "--oneline -5"),
    ("git diff", "--stat"),
    ("git show", "HEAD"),
    ("git status", "--short"),
    ("git branch", "-a"),
    ("git tag", "-l"),
    ("git remote", "-v"),
    ("wc", "-l src/*.rs"),
    ("grep", "-rn foo --include='*.rs' ."),
    ("rg", "-n foo"),
    ("awk", "'NR>1' f"),
    ("sed", "-n 1p f"),
    ("jq", ".name f.json"),
    ("find", ". -name '*.rs'"),
    ("ls", "-la src"),
    ("cat", "f"),
    ("head", "-n 5 f"),
    ("sort", "-u f"),
    ("tree", "-L 2"),
    ("du", "-sh src"),
];

/// Long options that run code, write files or read a program the checker cannot see under
/// some program's model, and that no listed program explains (so no abbreviation reaches a
/// harmless option either).
const DANGEROUS: &[&str] = &[
    "--output=x",
    "--output",
    "--ext-diff",
    "--textconv",
    "--exec=./evil",
    "--upload-pack=./evil",
    "--compress-program=./evil",
    "--in-place",
    "--from-file=x",
    "--to-command=./evil",
    "--load=x",
    "--pager=./evil",
];

const RULES: &[&str] = &[
    "Bash(git:*)",
    "Bash(wc:*)",
    "Bash(grep:*)",
    "Bash(rg:*)",
    "Bash(awk:*)",
    "Bash(sed:*)",
    "Bash(jq:*)",
    "Bash(find:*)",
    "Bash(ls:*)",
    "Bash(cat:*)",
    "Bash(head:*)",
    "Bash(sort:*)",
    "Bash(tree:*)",
    "Bash(du:*)",
];

fn permissions() -> Permissions {
    let mut rules = RuleSet::new();
    for rule in RULES {
        rules = rules.with_allow(rule).unwrap();
    }
    Permissions::builder(PathContext::new("/nonexistent/project"))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build()
}

/// Built once: compiling the rules dominates a check.
static POLICY: LazyLock<Permissions> = LazyLock::new(permissions);

fn verdict(permissions: &Permissions, command: &str) -> Verdict {
    permissions
        .check(&builtin::spec("Bash").unwrap(), &Subject::command(command))
        .verdict
}

#[test]
fn every_base_command_is_allowed() {
    let permissions = permissions();
    for (head, tail) in ALLOWED {
        let command = format!("{head} {tail}");
        assert_eq!(verdict(&permissions, &command), Verdict::Allow, "{command}");
    }
}

/// An extra word no model explains.
fn unexplained() -> impl Strategy<Value = String> {
    prop_oneof![
        // No option of any model starts with `zq`, so no abbreviation can reach one.
        "[a-z]{0,8}".prop_map(|tail| format!("--zq{tail}")),
        "[a-z]{0,8}".prop_map(|tail| format!("--zq{tail}=x")),
        prop::sample::select(DANGEROUS).prop_map(str::to_owned),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn an_unexplained_word_never_leaves_a_command_allowed(
        which in 0..ALLOWED.len(),
        word in unexplained(),
        at_end in any::<bool>(),
    ) {
        let (head, tail) = ALLOWED[which];
        let command = if at_end {
            format!("{head} {tail} {word}")
        } else {
            format!("{head} {word} {tail}")
        };
        prop_assert_ne!(verdict(&POLICY, &command), Verdict::Allow, "{:?}", command);
    }
}

#[test]
fn one_operand_more_than_the_program_takes_is_not_allowed() {
    let permissions = permissions();
    for command in [
        "git config user.email x",
        "git config user.email x y",
        "git config core.fsmonitor ./evil list",
        "git config --get user.email a b",
        "git config --list x",
        "git config get user.email x",
        "git stash list x",
        "git remote get-url origin x",
        "git worktree list x",
        "git branch new-branch",
        "git tag v1",
    ] {
        assert_ne!(verdict(&permissions, command), Verdict::Allow, "{command}");
    }
}
