//! The variables cargo sets for the crate it builds or runs, which a child cargo must not
//! inherit. xtask's commands drop them, and so do the example tests, which build examples:
//! they include this file by path (examples/tests/integration/common.rs).

/// Whether cargo sets `key` for the crate it runs (`cargo run` sets them for xtask). A child
/// cargo must not inherit them: build scripts track some (ring's tracks `CARGO_MANIFEST_DIR`),
/// so xtask's builds would not reuse what a plain `cargo` command built, nor it theirs.
pub(crate) fn is_set_for_a_crate(key: &str) -> bool {
    [
        "CARGO_MANIFEST_",
        "CARGO_PKG_",
        "CARGO_BIN_",
        "CARGO_CRATE_NAME",
    ]
    .iter()
    .any(|prefix| key.starts_with(prefix))
        || matches!(
            key,
            "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR" | "CARGO_RUSTC_CURRENT_DIR"
        )
}
