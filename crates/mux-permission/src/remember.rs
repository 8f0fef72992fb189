//! "Always allow": the narrowest rule that covers a call, and [`Permissions::remember`], which
//! adds it.

use mux_tool::{Subject, ToolSpec};

use crate::command::{analyze, split_words};
use crate::domain::host_of;
use crate::path::resolve;
use crate::settings::SaveError;
use crate::{Permissions, Rule, RuleError, RuleKind, Scope};

/// How to remember an "always allow" answer.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Remember {
    /// The scope the rule goes to.
    pub scope: Scope,
    /// For commands: a word prefix to allow (`git diff` records `Bash(git diff:*)`) instead
    /// of the exact command. Every command of the call must start with it.
    pub prefix: Option<String>,
    /// Save the scope's settings file afterwards.
    pub persist: bool,
}

impl Remember {
    /// Remember the exact call in `scope`, in memory.
    pub fn exact(scope: Scope) -> Self {
        Self {
            scope,
            prefix: None,
            persist: false,
        }
    }

    /// Remember a command prefix in `scope`, in memory.
    pub fn prefix(scope: Scope, prefix: impl Into<String>) -> Self {
        Self {
            scope,
            prefix: Some(prefix.into()),
            persist: false,
        }
    }

    /// Also save the scope's settings file.
    pub fn persisted(mut self) -> Self {
        self.persist = true;
        self
    }
}

/// Why an answer could not become a rule.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RememberError {
    /// The policy has no rules for that scope.
    #[error("the policy has no {0} scope to remember rules in")]
    NoScope(Scope),
    /// No rule can allow this call (it uses constructs rules cannot vouch for).
    #[error("no rule can allow this call: {0}")]
    NotRepresentable(String),
    /// A command does not start with the chosen prefix.
    #[error("the command `{command}` does not start with the prefix `{prefix}`")]
    NotCovered {
        /// The prefix.
        prefix: String,
        /// The command, as words joined by spaces.
        command: String,
    },
    /// The rule built does not parse (a prefix with an unclosed quote, say).
    #[error(transparent)]
    Rule(#[from] RuleError),
    /// Saving the settings file failed; the rule is in memory.
    #[error(transparent)]
    Save(#[from] SaveError),
}

/// Prefixes an asker can offer for "always allow" on a command, longest first: the leading
/// words (up to two, options excluded) every command of the script shares. Empty when the
/// script cannot be allowed by a rule at all.
///
/// ```
/// use mux_permission::suggest_prefixes;
/// use mux_tool::Subject;
///
/// assert_eq!(suggest_prefixes(&Subject::command("git diff HEAD~1")), ["git diff", "git"]);
/// assert_eq!(suggest_prefixes(&Subject::command("git diff && git log -3")), ["git"]);
/// assert_eq!(suggest_prefixes(&Subject::command("ls")), ["ls"]);
/// assert!(suggest_prefixes(&Subject::command("echo $(id)")).is_empty());
/// ```
pub fn suggest_prefixes(subject: &Subject) -> Vec<String> {
    let Subject::Command(script) = subject else {
        return Vec::new();
    };
    let analysis = analyze(script);
    let Some(first) = analysis.commands.first() else {
        return Vec::new();
    };
    if !analysis.is_plain() {
        return Vec::new();
    }
    let shared = first
        .iter()
        .take(2)
        .take_while(|word| !word.starts_with('-') && !word.contains('*'))
        .enumerate()
        .take_while(|(i, word)| {
            analysis
                .commands
                .iter()
                .all(|words| words.get(*i) == Some(*word))
        })
        .count();
    (1..=shared)
        .rev()
        .filter_map(|n| quote_words(&first[..n]).ok())
        .collect()
}

impl Permissions {
    /// Records an "always allow" answer: the narrowest rule covering the call (or the
    /// caller's prefix) added to `scope`, and saved when `persist` is set and the scope has a
    /// settings file. Returns the rules added.
    pub fn remember(
        &self,
        spec: &ToolSpec,
        subject: &Subject,
        choice: &Remember,
    ) -> Result<Vec<Rule>, RememberError> {
        let target = self
            .scope(choice.scope)
            .ok_or(RememberError::NoScope(choice.scope))?;
        let tool = spec.name.as_str();
        let texts = narrowest(tool, subject, choice.prefix.as_deref(), self)?;
        let mut rules = Vec::with_capacity(texts.len());
        for text in texts {
            let rule = Rule::parse(&text)?;
            target.add(RuleKind::Allow, rule.clone());
            rules.push(rule);
        }
        tracing::info!(
            target: "mux_permission",
            tool,
            scope = choice.scope.as_str(),
            rules = ?rules.iter().map(Rule::as_str).collect::<Vec<_>>(),
            "remembered an always-allow answer"
        );
        if choice.persist {
            target.save()?;
        }
        Ok(rules)
    }
}

fn narrowest(
    tool: &str,
    subject: &Subject,
    prefix: Option<&str>,
    permissions: &Permissions,
) -> Result<Vec<String>, RememberError> {
    match subject {
        Subject::Command(script) => {
            let analysis = analyze(script);
            if let Some(why) = analysis.hazards.first() {
                return Err(RememberError::NotRepresentable(why.clone()));
            }
            if let Some(glob) = analysis.globs.iter().flatten().flatten().next() {
                return Err(RememberError::NotRepresentable(format!(
                    "the pattern `{glob}` expands to words no exact rule can name"
                )));
            }
            if let Some(prefix) = prefix {
                let wanted = split_words(prefix).map_err(|problem| {
                    RememberError::NotRepresentable(format!("the prefix `{prefix}`: {problem}"))
                })?;
                for words in &analysis.commands {
                    if wanted.is_empty() || !words.starts_with(&wanted) {
                        return Err(RememberError::NotCovered {
                            prefix: prefix.to_owned(),
                            command: words.join(" "),
                        });
                    }
                }
                return Ok(vec![format!("{tool}({}:*)", quote_words(&wanted)?)]);
            }
            let mut texts = Vec::new();
            for words in &analysis.commands {
                let text = format!("{tool}({})", quote_words(words)?);
                if !texts.contains(&text) {
                    texts.push(text);
                }
            }
            Ok(texts)
        }
        Subject::Path(path) => {
            let context = permissions.context();
            let joined = match (path.strip_prefix("~"), context.home()) {
                (Ok(rest), Some(home)) => home.join(rest),
                _ => context.root().join(path),
            };
            let real = resolve(&joined).map_err(|err| {
                RememberError::NotRepresentable(format!(
                    "the path `{}` cannot be resolved: {err}",
                    path.display()
                ))
            })?;
            let text = real.to_str().ok_or_else(|| {
                RememberError::NotRepresentable(format!(
                    "the path `{}` is not UTF-8",
                    real.display()
                ))
            })?;
            Ok(vec![format!("{tool}({})", globset::escape(text))])
        }
        Subject::Url(url) => {
            let host = host_of(url).ok_or_else(|| {
                RememberError::NotRepresentable(format!("the URL `{url}` has no host"))
            })?;
            Ok(vec![format!("{tool}(domain:{host})")])
        }
        _ => Ok(vec![tool.to_owned()]),
    }
}

/// Joins words so that [`split_words`] gives them back, refusing words a pattern would read
/// as a wildcard.
fn quote_words(words: &[String]) -> Result<String, RememberError> {
    let mut out = Vec::with_capacity(words.len());
    for word in words {
        if word.contains('*') {
            return Err(RememberError::NotRepresentable(format!(
                "the word `{word}` contains `*`, which a rule reads as a wildcard"
            )));
        }
        let plain = !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_alphanumeric() || "-_./=:,+@%^".contains(c));
        if plain {
            out.push(word.clone());
        } else {
            out.push(format!("'{}'", word.replace('\'', r"'\''")));
        }
    }
    Ok(out.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_words_round_trip() {
        let words: Vec<String> = ["echo", "a b", "it's", ""].map(String::from).to_vec();
        let text = quote_words(&words).unwrap_or_default();
        assert_eq!(split_words(&text).unwrap_or_default(), words);
    }
}
