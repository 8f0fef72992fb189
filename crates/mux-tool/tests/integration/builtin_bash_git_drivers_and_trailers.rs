//! git under the wall, given a planted git directory explicitly (`--git-dir`, `GIT_DIR`):
//! drivers named by its `info/attributes` (a filter, a textconv, a diff command, under names
//! of the planter's choosing) and trailer commands (`trailer.<token>.cmd`, the older
//! `trailer.<token>.command`) run nothing, since no file of fixed keys could name them all: git
//! refuses such a directory. A control outside the wall shows each planted program does run
//! there. The files git is made to include live in one directory a user, so no process
//! leaves one behind. Uses the real git.
#![cfg(all(feature = "builtin", target_os = "linux"))]

use std::path::Path;

use mux_tool::builtin::SandboxPolicy;

use crate::common::git::{canaries, one_commit, top_repository};
use crate::common::{bash, layout, run};

/// Plants `planted/` in `root`: a repository whose config defines drivers and trailers that
/// each touch `canary-<way>`, named by its `info/attributes` only.
fn plant(root: &Path) {
    let repo = root.join("planted");
    std::fs::create_dir_all(&repo).unwrap();
    one_commit(&repo, &[]);
    let canary = |way: &str| root.join(format!("canary-{way}")).display().to_string();
    let config = format!(
        "[filter \"q7\"]\n\tclean = \"touch {clean}; cat\"\n\tsmudge = \"touch {smudge}; cat\"\n\
         [diff \"q7\"]\n\ttextconv = \"touch {textconv}; cat\"\n\
         [diff \"z9\"]\n\tcommand = \"touch {command}; true\"\n\
         [trailer \"t1\"]\n\tcmd = \"touch {cmd}; echo\"\n\tifMissing = add\n\
         [trailer \"t2\"]\n\tcommand = \"touch {old}; echo\"\n\tifMissing = add\n",
        clean = canary("clean"),
        smudge = canary("smudge"),
        textconv = canary("textconv"),
        command = canary("diff-command"),
        cmd = canary("trailer-cmd"),
        old = canary("trailer-command"),
    );
    let path = repo.join(".git/config");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&config);
    std::fs::write(&path, text).unwrap();
    std::fs::create_dir_all(repo.join(".git/info")).unwrap();
    std::fs::write(
        repo.join(".git/info/attributes"),
        "*.txt filter=q7 diff=q7\n*.md diff=z9\n",
    )
    .unwrap();
    std::fs::write(repo.join("f.txt"), "two\n").unwrap();
    std::fs::write(repo.join("g.md"), "new\n").unwrap();
}

/// Commands that name `planted/.git`, each meant to run some of the planted programs.
const ATTACKS: &[&str] = &[
    "git --git-dir=planted/.git --work-tree=planted status",
    "git --git-dir=planted/.git --work-tree=planted diff",
    "git --git-dir=planted/.git --work-tree=planted log -p -1",
    "git --git-dir=planted/.git --work-tree=planted hash-object planted/f.txt",
    "git --git-dir=planted/.git cat-file --filters HEAD:f.txt",
    "git --git-dir=planted/.git interpret-trailers < /dev/null",
    "GIT_DIR=planted/.git GIT_WORK_TREE=planted git add -N planted/g.md && \
     GIT_DIR=planted/.git GIT_WORK_TREE=planted git diff --ext-diff",
    "cd planted && git --git-dir=.git -c user.name=a -c user.email=b commit -qam two --trailer a=b",
];

const WAYS: [&str; 6] = [
    "canary-clean",
    "canary-diff-command",
    "canary-smudge",
    "canary-textconv",
    "canary-trailer-cmd",
    "canary-trailer-command",
];

#[tokio::test]
async fn drivers_and_trailers_of_a_planted_git_directory_run_nothing_under_the_wall() {
    let l = layout();
    let root = &l.root;
    top_repository(root);
    plant(root);

    // The control: outside the wall, the planted programs run.
    let unwalled = bash(root, SandboxPolicy::FullAccess);
    for attack in ATTACKS {
        run(&unwalled, attack).await;
    }
    let ran = canaries(root, "canary");
    for way in [
        "canary-clean",
        "canary-smudge",
        "canary-textconv",
        "canary-trailer-command",
    ] {
        assert!(ran.contains(&way.to_owned()), "{way} did not run: {ran:?}");
    }
    assert!(
        ran.iter().all(|way| WAYS.contains(&way.as_str())),
        "{ran:?}"
    );
    std::fs::remove_dir_all(root.join("planted")).unwrap();
    plant(root);
    canaries(root, "canary");

    for git_writes in [false, true] {
        let walled = bash(root, SandboxPolicy::WorkspaceWrite).git_writes(git_writes);
        for attack in ATTACKS {
            let out = run(&walled, attack).await;
            assert_eq!(
                canaries(root, "canary"),
                Vec::<String>::new(),
                "{attack} (git_writes {git_writes}): {}",
                out.to_text()
            );
            assert!(
                out.is_error && out.to_text().contains("mux-refuses-git-directories"),
                "{attack}: {}",
                out.to_text()
            );
        }
    }
    // The user's own repository still works, named explicitly too.
    let out = run(
        &bash(root, SandboxPolicy::WorkspaceWrite),
        "git --git-dir=.git log -1 --format=%s",
    )
    .await;
    assert!(
        !out.is_error && out.to_text().contains("top"),
        "{}",
        out.to_text()
    );
}

#[tokio::test]
async fn the_files_git_includes_live_in_one_directory_a_user() {
    let l = layout();
    let walled = bash(&l.root, SandboxPolicy::WorkspaceWrite);
    let out = run(&walled, "env | grep '^GIT_CONFIG_VALUE_' | cut -d= -f2-").await;
    assert!(!out.is_error, "{}", out.to_text());
    let text = out.to_text();
    let files: Vec<&str> = text
        .lines()
        .filter(|value| value.ends_with(".gitconfig"))
        .collect();
    assert!(!files.is_empty(), "{text}");
    let uid = effective_uid();
    let dir = std::env::temp_dir().join(format!("mux-git-{uid}"));
    for file in files {
        assert_eq!(Path::new(file).parent(), Some(dir.as_path()), "{file}");
    }
}

/// This process's effective user id, from `/proc`.
fn effective_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|id| id.parse().ok())
        .unwrap()
}
