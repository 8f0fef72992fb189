//! The `page` step: mux-web's chat page bundle (`crates/mux-web/page/dist/app.js`, committed
//! and compiled into the crate) is exactly what esbuild makes of its source. It installs the
//! page's pinned esbuild with `npm ci`, runs the `build` script of its package.json with the
//! output redirected under `target/`, and compares the bytes.

use std::path::Path;
use std::process::Command;

use crate::cargo::workspace_root;
use crate::peers::{npm_ci, run_in};

/// The page's folder, relative to the workspace root.
const PAGE: &str = "crates/mux-web/page";
/// The bundle the build script writes, relative to the page's folder.
const BUNDLE: &str = "dist/app.js";

/// Rebuilds the bundle aside and fails when it differs from the committed one.
pub(crate) fn run() -> Result<(), String> {
    let dir = workspace_root().join(PAGE);
    npm_ci(&dir)?;
    let out = workspace_root().join("target/page-check/app.js");
    let args = build_args(&dir, &out)?;
    let esbuild = dir.join("node_modules/.bin/esbuild");
    run_in(
        &dir,
        Command::new(&esbuild).args(&args),
        "esbuild (the page's build script)",
    )?;
    let read = |path: &Path| {
        std::fs::read(path).map_err(|err| format!("cannot read {}: {err}", path.display()))
    };
    if read(&out)? != read(&dir.join(BUNDLE))? {
        return Err(format!(
            "{PAGE}/{BUNDLE} is not esbuild's output of {PAGE}/src: run `npm ci && npm run build` \
             in {PAGE} and commit the bundle"
        ));
    }
    eprintln!("page: {PAGE}/{BUNDLE} matches its source");
    Ok(())
}

/// The arguments of package.json's `build` script (`esbuild ARGS…`), with `--outfile=` moved
/// to `out`.
fn build_args(dir: &Path, out: &Path) -> Result<Vec<String>, String> {
    let file = dir.join("package.json");
    let text = std::fs::read_to_string(&file)
        .map_err(|err| format!("cannot read {}: {err}", file.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|err| format!("{} is not JSON: {err}", file.display()))?;
    let script = json["scripts"]["build"]
        .as_str()
        .ok_or_else(|| format!("{} has no scripts.build", file.display()))?;
    rewrite(script, out)
}

/// `esbuild a b --outfile=X c` → `[a, b, --outfile=out, c]`.
fn rewrite(script: &str, out: &Path) -> Result<Vec<String>, String> {
    let mut words = script.split_whitespace();
    if words.next() != Some("esbuild") {
        return Err(format!(
            "the page's build script is not `esbuild …`: {script}"
        ));
    }
    let mut args = Vec::new();
    let mut moved = false;
    for word in words {
        if word == format!("--outfile={BUNDLE}") {
            args.push(format!("--outfile={}", out.display()));
            moved = true;
        } else {
            args.push(word.to_owned());
        }
    }
    if !moved {
        return Err(format!(
            "the page's build script does not write --outfile={BUNDLE}: {script}"
        ));
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use super::rewrite;

    #[test]
    fn the_output_moves_and_the_rest_stays() {
        let args = rewrite(
            "esbuild src/app.js --bundle --minify --outfile=dist/app.js",
            Path::new("/t/app.js"),
        )
        .unwrap();
        assert_eq!(
            args,
            ["src/app.js", "--bundle", "--minify", "--outfile=/t/app.js"]
        );
    }

    #[test]
    fn another_tool_or_output_is_refused() {
        assert!(rewrite("webpack src/app.js", Path::new("/t")).is_err());
        assert!(rewrite("esbuild src/app.js --outfile=elsewhere.js", Path::new("/t")).is_err());
    }
}
