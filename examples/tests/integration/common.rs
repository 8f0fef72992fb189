//! What the example tests share.

use std::path::PathBuf;
use std::process::Command;

/// Builds the example (a no-op when it is fresh) and returns its path, beside this test's
/// own binary in the target directory. The flags match `cargo xtask test`'s, and the variables
/// cargo set for this test are not passed on (ring's build script tracks
/// `CARGO_MANIFEST_DIR`), so the build reuses the test step's artifacts.
pub(crate) fn example(name: &str) -> PathBuf {
    let mut cargo = Command::new(env!("CARGO"));
    for (key, _) in std::env::vars() {
        let for_this_crate = [
            "CARGO_MANIFEST_",
            "CARGO_PKG_",
            "CARGO_BIN_",
            "CARGO_CRATE_NAME",
        ]
        .iter()
        .any(|prefix| key.starts_with(prefix))
            || matches!(
                key.as_str(),
                "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR" | "CARGO_RUSTC_CURRENT_DIR"
            );
        if for_this_crate {
            cargo.env_remove(key);
        }
    }
    let status = cargo
        .args([
            "build",
            "--quiet",
            "--workspace",
            "--all-features",
            "--example",
            name,
        ])
        .status()
        .unwrap();
    assert!(status.success(), "building the example {name} failed");
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}
