//! A git command that reaches a git directory other than the root's own `.git` asks, under
//! any rule: such a directory may be one the agent wrote (four allowed `write_file` calls made
//! `evil/` with a `core.fsmonitor`, then `git --git-dir=evil status` ran it), and its config
//! names programs git runs. The strings are only analysed, never run.

use crate::real_programs::verdict;
use mux_permission::{Mode, PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict};

fn permissions(mode: Mode) -> Permissions {
    let rules = [
        "Bash(git:*)",
        "Bash(git status:*)",
        "Bash(git log:*)",
        "Bash(cd:*)",
    ]
    .iter()
    .fold(RuleSet::new().with_mode(mode), |rules, rule| {
        rules.with_allow(rule).unwrap()
    });
    Permissions::builder(PathContext::new("/nonexistent/project"))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build()
}

#[test]
fn another_git_directory_asks_under_any_rule() {
    for mode in [Mode::Default, Mode::AcceptEdits] {
        let permissions = permissions(mode);
        for command in [
            "git --git-dir=evil status",
            "git --git-dir evil status",
            "git --git-dir=./evil/.git log",
            "git --git-dir=sub/.git status",
            "git --git-dir=/tmp/x status",
            "git --git-dir=.git/modules/../../evil status",
            "git --git-dir=.GIT status",
            "git --work-tree=evil status",
            "git --work-tree /elsewhere status",
            "git -C evil status",
            "git -C sub log --oneline",
            "git -C . -C evil status",
            "git -C .. status",
            "git -C / status",
            "git --bare log",
            "git --bare status",
            "GIT_DIR=evil git status",
            "GIT_WORK_TREE=evil git status",
            "GIT_CONFIG_GLOBAL=evil/cfg git status",
            "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=./x git status",
            "GIT_CONFIG_PARAMETERS=x git status",
            "env GIT_DIR=evil git status",
            "export GIT_DIR=evil; git status",
            "git -c core.fsmonitor=./x status",
            "git --config-env=core.pager=X log",
            "git --exec-path=evil status",
        ] {
            assert_ne!(
                verdict(&permissions, command),
                Verdict::Allow,
                "{command} [{mode}]"
            );
        }
    }
}

#[test]
fn the_roots_own_repository_is_still_vouched_for() {
    let permissions = permissions(Mode::Default);
    for command in [
        "git status",
        "git -C . status",
        "git -C ./ log --oneline -5",
        "git -C . -C . status",
        "git --git-dir=.git status",
        "git --git-dir .git log -1",
        "git --git-dir=./.git/ status",
        "git --work-tree=. status",
        "git --git-dir=.git --work-tree=. status",
        "git --no-pager log -3",
    ] {
        assert_eq!(verdict(&permissions, command), Verdict::Allow, "{command}");
    }
}
