//! `cargo xtask semver`: the published crates' public API against the last release, by
//! cargo-semver-checks. The baseline is the highest `vMAJOR.MINOR.PATCH` tag reachable from
//! `HEAD`; while there is none (nothing was released yet), the step says so and passes.

use std::process::Command;

use crate::cargo::{Cmd, workspace_root};

pub(crate) fn run() -> Result<(), String> {
    let output = Command::new("git")
        .args(["tag", "--merged", "HEAD", "--list", "v*"])
        .current_dir(workspace_root())
        .output()
        .map_err(|err| format!("running git tag: {err}"))?;
    if !output.status.success() {
        return Err(format!(
            "git tag failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let tags = String::from_utf8_lossy(&output.stdout);
    let Some(baseline) = latest_release(&tags) else {
        eprintln!(
            "xtask: no release tag (vMAJOR.MINOR.PATCH) is reachable from HEAD: no earlier API to check against"
        );
        return Ok(());
    };
    if Cmd::cargo(["semver-checks", "--version"])
        .quiet()
        .run()
        .is_err()
    {
        eprintln!("xtask: cargo-semver-checks is missing; installing it");
        Cmd::cargo(["install", "cargo-semver-checks", "--locked"]).run()?;
    }
    eprintln!("xtask: checking the published crates' API against {baseline}");
    // `--workspace` takes the members crates.io would accept (`publish` not false).
    Cmd::cargo([
        "semver-checks",
        "check-release",
        "--workspace",
        "--baseline-rev",
        baseline,
    ])
    .run()
}

/// The highest release tag among `tags` (one per line): `vMAJOR.MINOR.PATCH`, compared as
/// numbers; pre-releases (`v1.0.0-rc.1`) and other names are not releases.
pub(crate) fn latest_release(tags: &str) -> Option<&str> {
    tags.lines()
        .map(str::trim)
        .filter_map(|tag| Some((release_version(tag)?, tag)))
        .max()
        .map(|(_, tag)| tag)
}

fn release_version(tag: &str) -> Option<(u64, u64, u64)> {
    let mut parts = tag.strip_prefix('v')?.split('.');
    let mut number = || -> Option<u64> {
        let part = parts.next()?;
        (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse().ok())
            .flatten()
    };
    let version = (number()?, number()?, number()?);
    parts.next().is_none().then_some(version)
}

#[cfg(test)]
mod tests {
    use super::latest_release;

    #[test]
    fn the_highest_release_is_the_baseline_by_number_not_by_text() {
        assert_eq!(latest_release("v0.9.0\nv0.10.0\nv0.2.1\n"), Some("v0.10.0"));
        assert_eq!(latest_release("v1.0.0\nv1.0.10\nv1.0.9"), Some("v1.0.10"));
    }

    #[test]
    fn pre_releases_and_other_names_are_not_releases() {
        assert_eq!(latest_release(""), None);
        assert_eq!(
            latest_release("v1.0.0-rc.1\nvnext\nv1.0\nv1.0.0.1\nv1..0\nrelease-1.0.0\n"),
            None
        );
        assert_eq!(latest_release("v2.0.0-rc.1\nv1.4.2\n"), Some("v1.4.2"));
    }
}
