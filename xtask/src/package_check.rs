//! The packaged crates checked as crates.io would build them: each `.crate` that
//! `cargo package` wrote is unpacked into a workspace of its own, where the crates depend on
//! one another's packaged copies (a `[patch.crates-io]` entry per crate, as the registry would
//! serve them), and each is checked alone with its default features.
//!
//! `cargo check`, not cargo's own verification (a full build per crate): what a packaging
//! mistake breaks (a file outside the crate's directory, a path dependency without a
//! version, a feature a dependency lacks) fails the check as it fails the build, in a
//! fraction of the time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use crate::cargo::Cmd;

/// A published crate: its name and version.
pub(crate) struct Packaged {
    pub(crate) name: String,
    pub(crate) version: String,
}

impl Packaged {
    fn dir_name(&self) -> String {
        format!("{}-{}", self.name, self.version)
    }
}

/// Unpacks `crates` from `target/package` into `target/package-check` and checks each.
pub(crate) fn check(target: &Path, lockfile: &Path, crates: &[Packaged]) -> Result<(), String> {
    let dir = target.join("package-check");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|err| format!("removing {}: {err}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).map_err(|err| format!("creating {}: {err}", dir.display()))?;
    for krate in crates {
        let archive = target
            .join("package")
            .join(format!("{}.crate", krate.dir_name()));
        let status = Command::new("tar")
            .arg("-xzf")
            .arg(&archive)
            .arg("-C")
            .arg(&dir)
            .status()
            .map_err(|err| format!("running tar on {}: {err}", archive.display()))?;
        if !status.success() {
            return Err(format!("tar could not unpack {}", archive.display()));
        }
        // The archive keeps its files' times, older than a build of an earlier packaging at
        // this same path: made new, cargo checks them again rather than trusting that build.
        touch_all(&dir.join(krate.dir_name()))?;
    }
    std::fs::write(dir.join("Cargo.toml"), manifest(crates))
        .map_err(|err| format!("writing the check workspace's manifest: {err}"))?;
    // The workspace's versions of every dependency; cargo drops what these crates do not use.
    std::fs::copy(lockfile, dir.join("Cargo.lock"))
        .map_err(|err| format!("copying {}: {err}", lockfile.display()))?;
    let manifest_path = dir.join("Cargo.toml");
    for krate in crates {
        Cmd::cargo(["check", "--quiet", "--package", krate.name.as_str()])
            .arg("--manifest-path")
            .arg(&manifest_path)
            // The workspace's target directory: dependencies built there already are reused.
            .arg("--target-dir")
            .arg(target)
            .run()
            .map_err(|err| format!("the packaged {} does not build: {err}", krate.dir_name()))?;
    }
    Ok(())
}

/// The check workspace: every unpacked crate a member, and each the registry's copy of itself.
fn manifest(crates: &[Packaged]) -> String {
    let members: Vec<String> = crates
        .iter()
        .map(|c| format!("    \"{}\",", c.dir_name()))
        .collect();
    let patches: Vec<String> = crates
        .iter()
        .map(|c| format!("{} = {{ path = \"{}\" }}", c.name, c.dir_name()))
        .collect();
    format!(
        "# Written by `cargo xtask package`: the packaged crates, each unpacked.\n[workspace]\nresolver = \"3\"\nmembers = [\n{}\n]\n\n[patch.crates-io]\n{}\n",
        members.join("\n"),
        patches.join("\n")
    )
}

/// Sets the modification time of every file under `dir` to now.
fn touch_all(dir: &Path) -> Result<(), String> {
    let now = SystemTime::now();
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        let entries =
            std::fs::read_dir(&path).map_err(|err| format!("reading {}: {err}", path.display()))?;
        for entry in entries {
            let entry = entry.map_err(|err| format!("reading {}: {err}", path.display()))?;
            let kind = entry
                .file_type()
                .map_err(|err| format!("reading {}: {err}", entry.path().display()))?;
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                std::fs::File::options()
                    .write(true)
                    .open(entry.path())
                    .and_then(|file| file.set_modified(now))
                    .map_err(|err| format!("touching {}: {err}", entry.path().display()))?;
            }
        }
    }
    Ok(())
}
