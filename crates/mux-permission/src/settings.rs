//! Settings files: `{"permissions": {"allow": [], "ask": [], "deny": [], "defaultMode": …},
//! "sandbox": {…}}` (see [`crate::sandbox`] for the `sandbox` object).
//!
//! A rule is a string, or an object carrying examples that are checked at load:
//! `{"rule": "Bash(git diff:*)", "match": ["git diff HEAD"], "not_match": ["git diff-index"]}`.
//! An example is a string (a command, path or URL, by the rule's tool) or an object
//! `{"command": …}`, `{"path": …}` or `{"url": …}`.

use std::io::Write;
use std::path::{Path, PathBuf};

use mux_tool::Subject;
use serde_json::{Map, Value};

use crate::mode::UnknownMode;
use crate::prepared::Prepared;
use crate::{Mode, PathContext, Rule, RuleError, RuleKind, RuleSet, builtin};

/// A settings file that cannot be used. Every variant names the file; rule problems name the
/// rule too.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file cannot be read.
    #[error("cannot read permission settings {}: {source}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("permission settings {} are not valid JSON: {source}", file.display())]
    Json {
        /// The file.
        file: PathBuf,
        /// The parse error.
        source: serde_json::Error,
    },
    /// The JSON does not have the expected shape.
    #[error("permission settings {}: {problem}", file.display())]
    Shape {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A rule does not parse.
    #[error("permission settings {}: {source}", file.display())]
    Rule {
        /// The file.
        file: PathBuf,
        /// The rule and its problem.
        source: RuleError,
    },
    /// A rule's `match` or `not_match` example disagrees with the rule.
    #[error(
        "permission settings {}: rule `{rule}` {} its example {example}",
        file.display(),
        if *.should_match { "does not match" } else { "matches" }
    )]
    Example {
        /// The file.
        file: PathBuf,
        /// The rule.
        rule: String,
        /// The example, as JSON.
        example: String,
        /// Whether the example was listed under `match`.
        should_match: bool,
    },
    /// A rule names a tool that is neither a family, a built-in tool, an MCP tool nor one of
    /// the tools the loader was told about: most likely a typo, which would leave the rule
    /// silently unused.
    #[error(
        "permission settings {}: rule `{rule}` names the tool `{tool}`, which no family or known tool covers{}",
        file.display(),
        suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default()
    )]
    UnknownTool {
        /// The file.
        file: PathBuf,
        /// The rule as written.
        rule: String,
        /// The tool it names.
        tool: String,
        /// The closest known name, if one is close.
        suggestion: Option<String>,
    },
    /// The `sandbox` object has a key mux does not read, a value of the wrong type or an
    /// entry that does not parse; the error names the key.
    #[error("permission settings {}: {source}", file.display())]
    Sandbox {
        /// The file.
        file: PathBuf,
        /// The key and its problem.
        source: crate::sandbox::SandboxError,
    },
    /// `defaultMode` names no mode.
    #[error("permission settings {}: {source}", file.display())]
    Mode {
        /// The file.
        file: PathBuf,
        /// The unknown mode.
        source: UnknownMode,
    },
}

/// The rules could not be written back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SaveError {
    /// The scope is not backed by a file.
    #[error("this permission scope has no settings file to save to")]
    NoFile,
    /// Writing failed.
    #[error("cannot save permission settings {}: {source}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The existing file is not a JSON object, so it cannot be updated in place.
    #[error("cannot save permission settings {}: {problem}", file.display())]
    Existing {
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
}

const KNOWN_KEYS: [&str; 7] = [
    "allow",
    "ask",
    "deny",
    "defaultMode",
    "allowManagedPermissionRulesOnly",
    "additionalDirectories",
    "disableBypassPermissionsMode",
];

/// Parses settings text read from `file`. A rule must name a family, a built-in tool or an
/// MCP tool; see [`parse_for_tools`] to accept an application's own tool names.
pub fn parse(text: &str, file: &Path, context: &PathContext) -> Result<RuleSet, LoadError> {
    parse_for_tools(text, file, context, &[])
}

/// Parses settings text read from `file`, accepting rules that name one of `tools` besides
/// the families, built-in tools and MCP tools.
pub fn parse_for_tools(
    text: &str,
    file: &Path,
    context: &PathContext,
    tools: &[&str],
) -> Result<RuleSet, LoadError> {
    let shape = |problem: String| LoadError::Shape {
        file: file.to_owned(),
        problem,
    };
    let document: Value = serde_json::from_str(text).map_err(|source| LoadError::Json {
        file: file.to_owned(),
        source,
    })?;
    let Some(root) = document.as_object() else {
        return Err(shape("the top level must be a JSON object".into()));
    };
    let mut rules = RuleSet::new();
    if let Some(sandbox) = root.get("sandbox") {
        rules.sandbox = crate::sandbox::parse(sandbox).map_err(|source| LoadError::Sandbox {
            file: file.to_owned(),
            source,
        })?;
    }
    let Some(permissions) = root.get("permissions") else {
        return Ok(rules);
    };
    let Some(permissions) = permissions.as_object() else {
        return Err(shape("`permissions` must be an object".into()));
    };
    if let Some(unknown) = permissions
        .keys()
        .find(|k| !KNOWN_KEYS.contains(&k.as_str()))
    {
        return Err(shape(format!(
            "unknown key `permissions.{unknown}` (expected one of {})",
            KNOWN_KEYS.join(", ")
        )));
    }
    for kind in [RuleKind::Allow, RuleKind::Ask, RuleKind::Deny] {
        let Some(list) = permissions.get(kind.as_str()) else {
            continue;
        };
        let Some(list) = list.as_array() else {
            return Err(shape(format!(
                "`permissions.{}` must be an array",
                kind.as_str()
            )));
        };
        for entry in list {
            let rule = entry_rule(entry, kind, file, context)?;
            if !rule.names_known_tool() && !tools.contains(&rule.tool()) {
                return Err(LoadError::UnknownTool {
                    file: file.to_owned(),
                    rule: rule.as_str().to_owned(),
                    tool: rule.tool().to_owned(),
                    suggestion: crate::family::closest(rule.tool(), tools).map(str::to_owned),
                });
            }
            if entry.is_object() {
                rules
                    .entries
                    .insert(rule.as_str().to_owned(), entry.clone());
            }
            rules.add(kind, rule);
        }
    }
    match permissions.get("defaultMode") {
        None | Some(Value::Null) => {}
        Some(Value::String(name)) => {
            rules.mode = Some(name.parse::<Mode>().map_err(|source| LoadError::Mode {
                file: file.to_owned(),
                source,
            })?)
        }
        Some(other) => {
            return Err(shape(format!(
                "`defaultMode` must be a string, not {other}"
            )));
        }
    }
    match permissions.get("allowManagedPermissionRulesOnly") {
        None => {}
        Some(Value::Bool(only)) => rules.managed_rules_only = *only,
        Some(other) => {
            return Err(shape(format!(
                "`allowManagedPermissionRulesOnly` must be a boolean, not {other}"
            )));
        }
    }
    Ok(rules)
}

fn entry_rule(
    entry: &Value,
    kind: RuleKind,
    file: &Path,
    context: &PathContext,
) -> Result<Rule, LoadError> {
    let shape = |problem: String| LoadError::Shape {
        file: file.to_owned(),
        problem,
    };
    let parse = |text: &str| {
        Rule::parse(text).map_err(|source| LoadError::Rule {
            file: file.to_owned(),
            source,
        })
    };
    match entry {
        Value::String(text) => parse(text),
        Value::Object(object) => {
            let Some(Value::String(text)) = object.get("rule") else {
                return Err(shape(format!(
                    "an entry of `permissions.{}` must be a rule string or an object with a `rule` string, not {entry}",
                    kind.as_str()
                )));
            };
            if let Some(unknown) = object
                .keys()
                .find(|k| !matches!(k.as_str(), "rule" | "match" | "not_match"))
            {
                return Err(shape(format!(
                    "rule `{text}` has an unknown key `{unknown}`"
                )));
            }
            let rule = parse(text)?;
            for (key, should_match) in [("match", true), ("not_match", false)] {
                let examples = match object.get(key) {
                    None => continue,
                    Some(Value::Array(examples)) => examples,
                    Some(other) => {
                        return Err(shape(format!(
                            "rule `{text}`: `{key}` must be an array, not {other}"
                        )));
                    }
                };
                for example in examples {
                    let subject = example_subject(&rule, example).ok_or_else(|| {
                        shape(format!(
                            "rule `{text}`: example {example} must be a string or an object with `command`, `path` or `url`"
                        ))
                    })?;
                    let matched = Prepared::new(&subject, context).matched_by(&rule, context);
                    if matched != should_match {
                        return Err(LoadError::Example {
                            file: file.to_owned(),
                            rule: rule.as_str().to_owned(),
                            example: example.to_string(),
                            should_match,
                        });
                    }
                }
            }
            Ok(rule)
        }
        other => Err(shape(format!(
            "an entry of `permissions.{}` must be a rule string or an object, not {other}",
            kind.as_str()
        ))),
    }
}

fn example_subject(rule: &Rule, example: &Value) -> Option<Subject> {
    match example {
        Value::String(text) => {
            let kind = match (rule.spec(), builtin::subject_kind(rule.tool())) {
                (Some(spec), _) if spec.domain.is_some() => "url",
                (_, Some(kind)) => kind,
                (Some(spec), None) if spec.command.is_some() => "command",
                _ => "path",
            };
            Some(subject_of(kind, text))
        }
        Value::Object(object) if object.len() == 1 => {
            let (kind, value) = object.iter().next()?;
            let text = value.as_str()?;
            matches!(kind.as_str(), "command" | "path" | "url").then(|| subject_of(kind, text))
        }
        _ => None,
    }
}

fn subject_of(kind: &str, text: &str) -> Subject {
    match kind {
        "command" => Subject::command(text),
        "url" => Subject::url(text),
        _ => Subject::path(text),
    }
}

/// Writes `rules` into the `permissions` object of `file`, keeping its other keys, through a
/// temporary file in the same directory and a rename, so readers see the old or the new file.
pub fn save(file: &Path, rules: &RuleSet) -> Result<(), SaveError> {
    let io = |source| SaveError::Io {
        file: file.to_owned(),
        source,
    };
    let mut document = match std::fs::read_to_string(file) {
        Ok(text) => serde_json::from_str::<Value>(&text).map_err(|err| SaveError::Existing {
            file: file.to_owned(),
            problem: err.to_string(),
        })?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(err) => return Err(io(err)),
    };
    let Some(root) = document.as_object_mut() else {
        return Err(SaveError::Existing {
            file: file.to_owned(),
            problem: "the top level is not a JSON object".into(),
        });
    };
    let permissions = root
        .entry("permissions")
        .or_insert_with(|| Value::Object(Map::new()));
    if !permissions.is_object() {
        *permissions = Value::Object(Map::new());
    }
    if let Some(permissions) = permissions.as_object_mut() {
        for kind in [RuleKind::Allow, RuleKind::Ask, RuleKind::Deny] {
            let list = rules
                .list(kind)
                .iter()
                .map(|rule| {
                    rules
                        .entries
                        .get(rule.as_str())
                        .cloned()
                        .unwrap_or_else(|| Value::String(rule.as_str().to_owned()))
                })
                .collect();
            permissions.insert(kind.as_str().to_owned(), Value::Array(list));
        }
        match rules.mode {
            Some(mode) => {
                permissions.insert("defaultMode".into(), Value::String(mode.as_str().into()));
            }
            None => {
                permissions.remove("defaultMode");
            }
        }
    }
    let text = serde_json::to_string_pretty(&document).map_err(|err| SaveError::Existing {
        file: file.to_owned(),
        problem: err.to_string(),
    })?;
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "settings.json".into());
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut out = std::fs::File::create(&temp)?;
        out.write_all(text.as_bytes())?;
        out.write_all(b"\n")?;
        out.sync_all()?;
        std::fs::rename(&temp, file)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<RuleSet, LoadError> {
        parse(
            text,
            Path::new("/p/settings.json"),
            &PathContext::with_home("/p", None),
        )
    }

    #[test]
    fn loads_rules_and_mode() {
        let rules = load(
            r#"{"permissions": {"allow": ["Bash(git status)"], "deny": ["Read(./.env)"], "defaultMode": "plan"}, "other": 1}"#,
        );
        let rules = rules.unwrap_or_default();
        assert_eq!(rules.allow.len(), 1);
        assert_eq!(rules.deny.len(), 1);
        assert_eq!(rules.mode, Some(Mode::Plan));
    }

    #[test]
    fn errors_name_the_file_and_rule() {
        let err = load(r#"{"permissions": {"allow": ["Bash(git"]}}"#).err();
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("/p/settings.json") && text.contains("Bash(git"),
            "{text}"
        );
        assert!(matches!(load("{"), Err(LoadError::Json { .. })));
        assert!(matches!(
            load(r#"{"permissions": {"alow": []}}"#),
            Err(LoadError::Shape { .. })
        ));
        assert!(matches!(
            load(r#"{"permissions": {"defaultMode": "yolo"}}"#),
            Err(LoadError::Mode { .. })
        ));
    }

    #[test]
    fn examples_are_checked() {
        let ok = r#"{"permissions": {"allow": [{"rule": "Bash(git diff:*)", "match": ["git diff HEAD", "git diff"], "not_match": ["git diff-index", {"command": "git status"}]}]}}"#;
        assert!(load(ok).is_ok());
        let bad =
            r#"{"permissions": {"allow": [{"rule": "Bash(git diff:*)", "match": ["git diffx"]}]}}"#;
        assert!(matches!(
            load(bad),
            Err(LoadError::Example {
                should_match: true,
                ..
            })
        ));
        let bad_path = r#"{"permissions": {"deny": [{"rule": "Read(./secrets/**)", "not_match": ["secrets/key"]}]}}"#;
        assert!(matches!(
            load(bad_path),
            Err(LoadError::Example {
                should_match: false,
                ..
            })
        ));
        let url = r#"{"permissions": {"allow": [{"rule": "WebFetch(domain:example.com)", "match": ["https://example.com/x"], "not_match": ["https://example.com.evil.io/"]}]}}"#;
        assert!(load(url).is_ok());
    }
}
