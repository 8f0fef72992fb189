//! git as the user, outside the wall, for the tests that plant repositories and look for the
//! canary files their planted programs write.

use std::path::Path;

/// Runs git in `dir` as the user, outside the wall (a name and email set, the file protocol
/// allowed, no system config); the test fails unless git succeeds.
pub fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=u", "-c", "user.email=u@e", "-c"])
        .arg("protocol.file.allow=always")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Makes `dir` a repository (`git init -q` with `init`) holding one commit of `f.txt`.
pub fn one_commit(dir: &Path, init: &[&str]) {
    let mut args = vec!["init", "-q"];
    args.extend_from_slice(init);
    git(dir, &args);
    std::fs::write(dir.join("f.txt"), "one\n").unwrap();
    git(dir, &["add", "f.txt"]);
    git(dir, &["commit", "-qm", "one"]);
}

/// Makes `root` the user's repository, with one empty commit.
pub fn top_repository(root: &Path) {
    git(root, &["init", "-q"]);
    git(root, &["commit", "-q", "--allow-empty", "-m", "top"]);
}

/// The canaries `<prefix>-…` present in `root`, sorted; they are removed.
pub fn canaries(root: &Path, prefix: &str) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&format!("{prefix}-")))
        .collect();
    found.sort();
    for name in &found {
        std::fs::remove_file(root.join(name)).unwrap();
    }
    found
}
