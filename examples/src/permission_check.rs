//! The logic of the `permission_check` example, kept here so tests can drive it.
//!
//! `permission_check [--settings FILE]... [--mode MODE] [--root DIR] --tool NAME --input JSON`
//! prints one JSON object, `{"verdict":"allow|ask|deny","reason":…,"rule":…,"scope":…}`, and
//! exits 0; a malformed settings file, rule or argument prints `{"error":…}` and exits 2.
//! Settings files are project scopes; `--mode` sets the mode at the global scope, above them.

use std::path::{Path, PathBuf};

use mux::permission::{Mode, PathContext, Permissions, RuleSet, Scope, ScopeRules, builtin};
use mux::tool::builtin::Sandbox;
use mux::tool::{Subject, ToolSpec};
use serde_json::{Value, json};

/// What the example prints, and its exit code.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The JSON object printed.
    pub json: Value,
    /// 0 for a verdict, 2 for an error.
    pub exit_code: i32,
}

/// Runs the check for the arguments (without the program name).
pub fn run(args: impl IntoIterator<Item = String>) -> Report {
    match check(args) {
        Ok(json) => Report { json, exit_code: 0 },
        Err(error) => Report {
            json: json!({ "error": error }),
            exit_code: 2,
        },
    }
}

struct Args {
    settings: Vec<PathBuf>,
    mode: Option<Mode>,
    root: Option<PathBuf>,
    tool: String,
    input: Value,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut settings = Vec::new();
    let (mut mode, mut root, mut tool, mut input) = (None, None, None, None);
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("`{flag}` needs a value"));
        match flag.as_str() {
            "--settings" => settings.push(PathBuf::from(value()?)),
            "--mode" => mode = Some(value()?.parse::<Mode>().map_err(|e| e.to_string())?),
            "--root" => root = Some(PathBuf::from(value()?)),
            "--tool" => tool = Some(value()?),
            "--input" => {
                let text = value()?;
                input = Some(
                    serde_json::from_str::<Value>(&text)
                        .map_err(|e| format!("`--input` is not JSON: {e}"))?,
                );
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}`; usage: permission_check [--settings FILE]... [--mode MODE] [--root DIR] --tool NAME --input JSON"
                ));
            }
        }
    }
    Ok(Args {
        settings,
        mode,
        root,
        tool: tool.ok_or("`--tool NAME` is required")?,
        input: input.ok_or("`--input JSON` is required")?,
    })
}

fn check(args: impl IntoIterator<Item = String>) -> Result<Value, String> {
    let args = parse_args(args)?;
    let root = match args.root {
        Some(root) => root,
        None => std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?,
    };
    let permissions = policy(&root, &args.settings, args.mode)?;
    let (spec, subject) = tool_call(&root, &args.tool, &args.input)?;
    let verdict = permissions.check(&spec, &subject);
    serde_json::to_value(&verdict).map_err(|e| e.to_string())
}

/// The policy of settings files (project scopes) and a mode (global scope, above them),
/// anchored at `root`.
pub fn policy(
    root: &Path,
    settings: &[PathBuf],
    mode: Option<Mode>,
) -> Result<Permissions, String> {
    let context = PathContext::new(root);
    let mut builder = Permissions::builder(context.clone());
    for file in settings {
        let rules = ScopeRules::load(file, &context).map_err(|e| e.to_string())?;
        builder = builder.scope(Scope::Project, rules);
    }
    if let Some(mode) = mode {
        builder = builder.scope(
            Scope::Global,
            ScopeRules::new(RuleSet::new().with_mode(mode)),
        );
    }
    Ok(builder.build())
}

/// The spec and subject of a call: mux's own built-in tools (`read_file`, `bash`, …) through
/// their own `subject`, Claude Code's names (`Read`, `Bash`, …) through mux-permission's.
fn tool_call(root: &Path, tool: &str, input: &Value) -> Result<(ToolSpec, Subject), String> {
    if let Ok(sandbox) = Sandbox::new(root)
        && let Ok(tools) = mux::tool::builtin::tools(&sandbox)
        && let Some(found) = tools.iter().find(|t| t.spec().name.as_str() == tool)
    {
        return Ok((found.spec().clone(), found.subject(input)));
    }
    match builtin::spec(tool) {
        Some(spec) => {
            let subject = builtin::subject(tool, input).ok_or_else(|| {
                let field = match tool {
                    "Bash" => "\"command\"",
                    "WebFetch" => "\"url\"",
                    _ => "\"path\" or \"file_path\" (one, not both)",
                };
                format!("the input of `{tool}` needs a string {field}")
            })?;
            Ok((spec, subject))
        }
        None => {
            let spec = ToolSpec::new(tool, "a tool", json!({"type": "object"}))
                .map_err(|e| e.to_string())?;
            Ok((spec, Subject::None))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn run_with(args: &[&str]) -> Report {
        run(args.iter().map(|a| (*a).to_owned()))
    }

    /// mux's own tool names work as well as Claude Code's, through the tools' own subjects.
    #[test]
    fn muxs_tool_names_are_checked_like_claude_codes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(
            &file,
            r#"{"permissions": {"deny": ["Read(./secrets/**)", "Bash(rm:*)"]}}"#,
        )
        .unwrap();
        let (settings, root) = (file.to_str().unwrap(), dir.path().to_str().unwrap());
        for (tool, input) in [
            ("read_file", r#"{"path": "secrets/key"}"#),
            ("Read", r#"{"path": "secrets/key"}"#),
            ("grep", r#"{"pattern": "x", "path": "secrets"}"#),
            ("bash", r#"{"command": "rm -rf secrets"}"#),
        ] {
            let report = run_with(&[
                "--settings",
                settings,
                "--root",
                root,
                "--mode",
                "bypassPermissions",
                "--tool",
                tool,
                "--input",
                input,
            ]);
            assert_eq!(report.json["verdict"], "deny", "{tool}: {}", report.json);
        }
    }

    #[test]
    fn decides_with_settings_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(
            &file,
            r#"{"permissions": {"allow": ["Bash(git diff:*)", "Read(./src/**)"], "deny": ["Bash(rm:*)"]}}"#,
        )
        .unwrap();
        let settings = file.to_str().unwrap();
        let root = dir.path().to_str().unwrap();
        let allow = run_with(&[
            "--settings",
            settings,
            "--root",
            root,
            "--tool",
            "Bash",
            "--input",
            r#"{"command": "git diff HEAD"}"#,
        ]);
        assert_eq!(allow.exit_code, 0);
        assert_eq!(allow.json["verdict"], "allow");
        assert_eq!(allow.json["rule"], "Bash(git diff:*)");
        assert_eq!(allow.json["scope"], "project");

        let deny = run_with(&[
            "--settings",
            settings,
            "--tool",
            "Bash",
            "--input",
            r#"{"command": "git diff; rm -rf /"}"#,
        ]);
        assert_eq!((deny.exit_code, &deny.json["verdict"]), (0, &json!("deny")));

        let read = run_with(&[
            "--settings",
            settings,
            "--root",
            root,
            "--tool",
            "Read",
            "--input",
            r#"{"file_path": "src/lib.rs"}"#,
        ]);
        assert_eq!(read.json["verdict"], "allow");

        let dont_ask = run_with(&[
            "--settings",
            settings,
            "--mode",
            "dontAsk",
            "--tool",
            "WebFetch",
            "--input",
            r#"{"url": "https://example.com"}"#,
        ]);
        assert_eq!(dont_ask.json["verdict"], "deny");
        assert_eq!(dont_ask.json["scope"], "global");
    }

    #[test]
    fn bad_settings_and_arguments_exit_2() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, r#"{"permissions": {"allow": ["Bash(git diff"]}}"#).unwrap();
        let bad = run_with(&[
            "--settings",
            file.to_str().unwrap(),
            "--tool",
            "Bash",
            "--input",
            r#"{"command": "ls"}"#,
        ]);
        assert_eq!(bad.exit_code, 2);
        let error = bad.json["error"].as_str().unwrap();
        assert!(
            error.contains("Bash(git diff") && error.contains("settings.json"),
            "{error}"
        );

        std::fs::write(&file, r#"{"permissions": {"deny": ["Read(./a[)"]}}"#).unwrap();
        let bad_glob = run_with(&[
            "--settings",
            file.to_str().unwrap(),
            "--tool",
            "Read",
            "--input",
            r#"{"path": "x"}"#,
        ]);
        assert_eq!(bad_glob.exit_code, 2);
        assert!(
            bad_glob.json["error"]
                .as_str()
                .unwrap()
                .contains("Read(./a[)")
        );

        std::fs::write(&file, "{ not json").unwrap();
        let not_json = run_with(&[
            "--settings",
            file.to_str().unwrap(),
            "--tool",
            "Bash",
            "--input",
            r#"{"command": "ls"}"#,
        ]);
        assert_eq!(not_json.exit_code, 2);
        assert_eq!(run_with(&["--tool", "Bash"]).exit_code, 2);
        assert_eq!(run_with(&["--tool", "Bash", "--input", "{}"]).exit_code, 2);
        assert_eq!(
            run_with(&["--mode", "yolo", "--tool", "Bash", "--input", "{}"]).exit_code,
            2
        );
    }
}
