//! git under the wall: a repository the agent could have written (a nested `evil/` with a
//! config naming programs) runs none of them, however git reaches it, while the user's own
//! top-level repository, with the same kinds of config written by the user, runs them as
//! before. Every planted program writes a canary file; a control outside the wall shows each
//! one does run there. Uses the real git and `script` (for a terminal, so a pager could run).
#![cfg(all(feature = "builtin", target_os = "linux"))]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use mux_tool::builtin::SandboxPolicy;

use crate::common::git::{canaries, git, one_commit, top_repository};
use crate::common::{bash, layout, run};

/// Appends `text` to the file at `path`.
fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// A config that names a program for each way git runs one, each writing `<root>/<tag>-<way>`;
/// hooks live in `hooks/` of the working tree, and every file gets the filter `tag`.
fn plant(root: &Path, worktree: &Path, config: &Path, tag: &str) {
    let canary = |way: &str| root.join(format!("{tag}-{way}")).display().to_string();
    append(
        config,
        &format!(
            "[core]\n\tfsmonitor = \"touch {fsmonitor}; false\"\n\thooksPath = hooks\n\
             \tpager = \"touch {pager}; cat\"\n\
             [diff]\n\texternal = \"touch {diff}; true\"\n\
             [filter \"{tag}\"]\n\tclean = \"touch {filter}; cat\"\n\tsmudge = \"touch {filter}; cat\"\n",
            fsmonitor = canary("fsmonitor"),
            pager = canary("pager"),
            diff = canary("diff"),
            filter = canary("filter"),
        ),
    );
    std::fs::create_dir_all(worktree.join("hooks")).unwrap();
    let hook = worktree.join("hooks/pre-commit");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", canary("hook"))).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        worktree.join(".gitattributes"),
        format!("*.txt filter={tag}\n"),
    )
    .unwrap();
}

const WAYS: [&str; 5] = ["diff", "filter", "fsmonitor", "hook", "pager"];

/// Commands that reach `evil/` by discovery and by naming it, each meant to run one of the
/// planted programs.
const ATTACKS: &[&str] = &[
    "cd evil && git status",
    "cd evil && echo more >> f.txt && git diff",
    "cd evil && git -c user.name=a -c user.email=b commit -qam two",
    "cd evil && script -qc 'git -p log -1' /dev/null",
    "cd evil && script -qc 'git --paginate log -1' /dev/null",
    "cd evil && git add -A",
    "git --git-dir=evil/.git --work-tree=evil status",
    "echo more >> evil/f.txt && git --git-dir=evil/.git --work-tree=evil diff",
    "git --git-dir=evil/.git --work-tree=evil -c user.name=a -c user.email=b commit -qam three",
    "script -qc 'git --git-dir=evil/.git -p log -1' /dev/null",
    "GIT_DIR=evil/.git GIT_WORK_TREE=evil git diff HEAD",
    "cd evil/sub && GIT_DIR=../.git git status",
    "git -C evil status",
    // The red team's layout: a bare repository at the top of the root.
    "rm -rf bare && cp -r evil/.git bare && git --git-dir=bare diff HEAD~1 HEAD",
    "rm -rf bare && cp -r evil/.git bare && cd bare && git diff HEAD~1 HEAD",
];

#[tokio::test]
async fn a_planted_repository_runs_nothing_under_the_wall() {
    let l = layout();
    let root = &l.root;
    top_repository(root);
    let evil = root.join("evil");
    std::fs::create_dir_all(evil.join("sub")).unwrap();
    one_commit(&evil, &[]);
    plant(root, &evil, &evil.join(".git/config"), "evil");
    std::fs::write(evil.join("f.txt"), "changed\n").unwrap();

    // The control: outside the wall, each planted program runs.
    let unwalled = bash(root, SandboxPolicy::FullAccess);
    for attack in ATTACKS {
        run(&unwalled, attack).await;
    }
    assert_eq!(
        canaries(root, "evil"),
        WAYS.map(|way| format!("evil-{way}")),
        "outside the wall every planted program runs"
    );
    git(&evil, &["checkout", "-q", "--", "f.txt"]);
    std::fs::write(evil.join("f.txt"), "changed\n").unwrap();
    canaries(root, "evil");

    // Under the wall, none does, with git's writes on or off, and with nested repositories
    // refused or opened with neutral keys.
    for (git_writes, nested_git) in [(false, false), (true, false), (false, true)] {
        let walled = bash(root, SandboxPolicy::WorkspaceWrite)
            .git_writes(git_writes)
            .nested_git(nested_git);
        for attack in ATTACKS {
            let out = run(&walled, attack).await;
            assert_eq!(
                canaries(root, "evil"),
                Vec::<String>::new(),
                "{attack} (git_writes {git_writes}, nested_git {nested_git}): {}",
                out.to_text()
            );
        }
    }
    // Opened, a nested repository works.
    let out = run(
        &bash(root, SandboxPolicy::WorkspaceWrite).nested_git(true),
        "cd evil && git log --format=%s | tail -1",
    )
    .await;
    assert!(
        !out.is_error && out.to_text().contains("one"),
        "{}",
        out.to_text()
    );
    // A repository the command makes in its temp dir works, with neutral keys.
    let canary = root.join("scratch-fsmonitor");
    let out = run(
        &bash(root, SandboxPolicy::WorkspaceWrite),
        &format!(
            "cd \"$TMPDIR\" && git init -q x && cd x && git config core.fsmonitor 'touch {}; false' \
             && echo a > a && git add a && git status --short",
            canary.display()
        ),
    )
    .await;
    assert!(
        !out.is_error && out.to_text().contains("A  a"),
        "{}",
        out.to_text()
    );
    assert!(!canary.exists());
    // git pages only on a terminal, and the wall gives none, not even through `script`;
    // module `git`'s own tests page on one outside the wall.
    let out = run(
        &bash(root, SandboxPolicy::WorkspaceWrite),
        "script -qc 'git log -1 --format=%s' /dev/null",
    )
    .await;
    assert!(
        out.is_error && out.to_text().contains("pseudo-terminal"),
        "{}",
        out.to_text()
    );
}

#[tokio::test]
async fn the_users_own_repository_runs_what_its_config_names_as_before() {
    let l = layout();
    let root = &l.root;
    git(root, &["init", "-q"]);
    plant(root, root, &root.join(".git/config"), "top");
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    git(root, &["add", "a.txt", ".gitattributes", "hooks"]);
    git(root, &["commit", "-qm", "one"]);
    canaries(root, "top");
    std::fs::create_dir_all(root.join("src")).unwrap();

    let walled = bash(root, SandboxPolicy::WorkspaceWrite).git_writes(true);
    for (command, way) in [
        ("echo two >> a.txt && git status --short", "fsmonitor"),
        ("echo three >> a.txt && git diff", "diff"),
        ("git add a.txt", "filter"),
        (
            "git -c user.name=u -c user.email=u@e commit -qm two",
            "hook",
        ),
        ("cd src && echo four >> ../a.txt && git diff", "diff"),
    ] {
        let out = run(&walled, command).await;
        assert!(!out.is_error, "{command}: {}", out.to_text());
        let found = canaries(root, "top");
        assert!(
            found.contains(&format!("top-{way}")),
            "{command}: {found:?} {}",
            out.to_text()
        );
    }
}

#[tokio::test]
async fn the_users_submodules_still_work_under_the_wall() {
    let l = layout();
    let library = l.outside.join("library");
    std::fs::create_dir_all(&library).unwrap();
    git(&library, &["init", "-q"]);
    git(
        &library,
        &["commit", "-q", "--allow-empty", "-m", "library"],
    );
    let root = &l.root;
    git(root, &["init", "-q"]);
    git(
        root,
        &["submodule", "add", "-q", library.to_str().unwrap(), "lib"],
    );
    git(root, &["commit", "-qm", "with a submodule"]);

    let walled = bash(root, SandboxPolicy::WorkspaceWrite);
    for (command, expected) in [
        ("git status --short && echo done", "done"),
        ("cd lib && git log -1 --format=%s", "library"),
        ("git submodule status", "lib"),
    ] {
        let out = run(&walled, command).await;
        assert!(
            !out.is_error && out.to_text().contains(expected),
            "{command}: {}",
            out.to_text()
        );
    }
    // Its `.git` file cannot be swapped for a planted directory.
    let out = run(&walled, "rm lib/.git").await;
    assert!(out.is_error, "{}", out.to_text());
    assert!(root.join("lib/.git").is_file());
}

/// Drivers are named by attributes (`filter=x`, `diff=x`) and defined by the config under any
/// name, so no fixed key switches them off: git must not open a repository it finds by itself
/// unless it is the user's. Planted here through `.git/info/attributes`, which no setting
/// turns off, and in a SHA-256 repository, where the empty tree of `attr.tree` does not resolve.
#[tokio::test]
async fn drivers_named_by_attributes_run_in_no_repository_git_finds_by_itself() {
    let l = layout();
    let root = &l.root;
    top_repository(root);
    for (name, format) in [("info", "sha1"), ("sha256", "sha256")] {
        let repo = root.join(name);
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        one_commit(&repo, &[&format!("--object-format={format}")]);
        let canary = |way: &str| {
            root.join(format!("driver-{name}-{way}"))
                .display()
                .to_string()
        };
        append(
            &repo.join(".git/config"),
            &format!(
                "[filter \"x\"]\n\tclean = \"touch {}; cat\"\n[diff \"x\"]\n\tcommand = \"touch {}; true\"\n",
                canary("filter"),
                canary("diff"),
            ),
        );
        let attributes = if name == "info" {
            std::fs::create_dir_all(repo.join(".git/info")).unwrap();
            repo.join(".git/info/attributes")
        } else {
            repo.join(".gitattributes")
        };
        std::fs::write(attributes, "* filter=x diff=x\n").unwrap();
        std::fs::write(repo.join("f.txt"), "two\n").unwrap();
    }
    let attacks = |name: &str| {
        [
            format!("cd {name} && git status"),
            format!("cd {name} && git diff"),
            format!("git -C {name} diff"),
            format!("cd {name}/sub && git diff"),
            format!("cd {name} && git add -A"),
        ]
    };
    // The control: outside the wall, both drivers run in both repositories.
    let unwalled = bash(root, SandboxPolicy::FullAccess);
    for name in ["info", "sha256"] {
        for attack in attacks(name) {
            run(&unwalled, &attack).await;
        }
        assert_eq!(
            canaries(root, &format!("driver-{name}")),
            [
                format!("driver-{name}-diff"),
                format!("driver-{name}-filter")
            ],
        );
        git(&root.join(name), &["reset", "-q"]);
        canaries(root, &format!("driver-{name}"));
    }
    let walled = bash(root, SandboxPolicy::WorkspaceWrite);
    for name in ["info", "sha256"] {
        for attack in attacks(name) {
            let out = run(&walled, &attack).await;
            assert_eq!(
                canaries(root, &format!("driver-{name}")),
                Vec::<String>::new(),
                "{attack}: {}",
                out.to_text()
            );
            // Refused, or (for commands that may run outside a repository) not found.
            assert!(
                out.is_error
                    && (out.to_text().contains("dubious ownership")
                        || out.to_text().contains("Not a git repository")),
                "{attack}: {}",
                out.to_text()
            );
        }
    }
}
