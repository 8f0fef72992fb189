//! Rules: `Tool` or `Tool(specifier)`, and the list ([`RuleKind`]) a rule sits in.

use std::fmt;
use std::str::FromStr;

use crate::Family;
use crate::command::{CommandPattern, CommandPatternError};
use crate::domain::{DomainPattern, DomainPatternError};
use crate::path::{PathPattern, PathPatternError};

/// Which list a rule sits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    /// Calls it matches run without asking.
    Allow,
    /// Calls it matches ask, even when an allow rule matches too.
    Ask,
    /// Calls it matches are refused, whatever else matches.
    Deny,
}

impl RuleKind {
    /// The settings-file key.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

/// One permission rule, such as `Bash(git diff:*)`, `Read(./src/**)`,
/// `WebFetch(domain:example.com)` or `mcp__github__*`.
///
/// The tool part is an exact tool name, or a name ending in `*` that matches by prefix. Which
/// part of the specifier applies to a call comes from the call's
/// [`Subject`](mux_tool::Subject): a command subject is matched as a command pattern, a path
/// subject as a path pattern, a URL subject as a `domain:` pattern.
///
/// ```
/// use mux_permission::Rule;
///
/// let rule: Rule = "Bash(git diff:*)".parse()?;
/// assert_eq!(rule.tool(), "Bash");
/// assert_eq!(rule.specifier(), Some("git diff:*"));
/// assert!("Bash(".parse::<Rule>().is_err());
/// # Ok::<(), mux_permission::RuleError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Rule {
    text: String,
    tool: String,
    tool_is_prefix: bool,
    specifier: Option<Specifier>,
}

/// A specifier compiled for every kind of subject it can apply to.
#[derive(Clone, Debug)]
pub(crate) struct Specifier {
    pub(crate) raw: String,
    pub(crate) command: Option<CommandPattern>,
    pub(crate) path: Option<PathPattern>,
    pub(crate) domain: Option<DomainPattern>,
}

/// A rule that cannot be used, naming the rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid permission rule `{rule}`: {problem}")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub problem: RuleProblem,
}

/// What is wrong with a rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleProblem {
    /// The rule is empty.
    #[error("the rule is empty")]
    Empty,
    /// The tool name has characters a tool name cannot have.
    #[error("`{0}` is not a tool name (letters, digits, `_` and `-`, optionally ending in `*`)")]
    ToolName(String),
    /// `Tool(` without the closing `)`, or text after it.
    #[error("expected `Tool` or `Tool(specifier)`")]
    Syntax,
    /// `Tool()`.
    #[error("the specifier in parentheses is empty")]
    EmptySpecifier,
    /// A `domain:` specifier that is not a host.
    #[error(transparent)]
    Domain(#[from] DomainPatternError),
    /// A built-in URL tool's specifier is not `domain:…`.
    #[error("the specifier of a URL tool must be `domain:host`")]
    NotADomain,
    /// A built-in shell tool's specifier is not a command pattern.
    #[error("invalid command pattern: {0}")]
    Command(CommandPatternError),
    /// A built-in file tool's specifier is not a path pattern.
    #[error("invalid path pattern: {0}")]
    Path(PathPatternError),
    /// The specifier is neither a usable command pattern nor a usable path pattern.
    #[error("the specifier is neither a command pattern ({command}) nor a path pattern ({path})")]
    Specifier {
        /// Why it is not a command pattern.
        command: CommandPatternError,
        /// Why it is not a path pattern.
        path: PathPatternError,
    },
}

impl Rule {
    /// Parses a rule.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let fail = |problem| RuleError {
            rule: text.to_owned(),
            problem,
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(fail(RuleProblem::Empty));
        }
        let (tool, specifier) = match trimmed.find('(') {
            None => (trimmed, None),
            Some(open) => {
                let inner = trimmed[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| fail(RuleProblem::Syntax))?;
                (&trimmed[..open], Some(inner))
            }
        };
        let (name, tool_is_prefix) = match tool.strip_suffix('*') {
            Some(name) => (name, true),
            None => (tool, false),
        };
        let name_ok = !name.is_empty() || tool_is_prefix;
        if !name_ok
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(fail(RuleProblem::ToolName(tool.to_owned())));
        }
        let specifier = match specifier {
            None => None,
            Some(raw) if raw.trim().is_empty() => return Err(fail(RuleProblem::EmptySpecifier)),
            Some(raw) => {
                Some(Specifier::compile(raw, crate::builtin::subject_kind(name)).map_err(fail)?)
            }
        };
        Ok(Self {
            text: trimmed.to_owned(),
            tool: name.to_owned(),
            tool_is_prefix,
            specifier,
        })
    }

    /// The rule as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The tool name (without a trailing `*`).
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The specifier in parentheses, if any.
    pub fn specifier(&self) -> Option<&str> {
        self.specifier.as_ref().map(|s| s.raw.as_str())
    }

    /// Whether the rule is about the tool named `name`. `mcp__server` also covers every tool
    /// of that server, as `mcp__server__*` does.
    pub fn applies_to(&self, name: &str) -> bool {
        if self.tool_is_prefix {
            return name.starts_with(&self.tool);
        }
        if name == self.tool {
            return true;
        }
        let is_server_rule = self.tool.starts_with("mcp__") && !self.tool[5..].contains("__");
        is_server_rule
            && self.specifier.is_none()
            && name
                .strip_prefix(&self.tool)
                .is_some_and(|rest| rest.starts_with("__") && rest.len() > 2)
    }

    /// Whether the rule reaches a call to the tool `name` of `family` (see
    /// [`Family::of`]) in a list of `kind`:
    ///
    /// - a rule naming the tool (or a prefix of it, or its MCP server) reaches it;
    /// - a rule naming a family (`Read`, `Edit`/`Write`, `Bash`, `WebFetch`) reaches every
    ///   tool of that family;
    /// - a Claude Code alias (`Grep`, `Glob`, `LS`) reaches the mux tool it stands for;
    /// - a deny or ask rule naming one built-in tool (`read_file(…)`) reaches that tool's
    ///   whole family, since leaving a sibling open (`grep` beside `read_file`) would let the
    ///   call through by another door. An allow rule stays with the tool it names.
    ///
    /// ```
    /// use mux_permission::{Family, Rule, RuleKind};
    ///
    /// let deny: Rule = "read_file(./secrets/**)".parse()?;
    /// assert!(deny.reaches("grep", Some(Family::Read), RuleKind::Deny));
    /// assert!(!deny.reaches("grep", Some(Family::Read), RuleKind::Allow));
    /// let bash: Rule = "Bash(git status)".parse()?;
    /// assert!(bash.reaches("bash", Some(Family::Bash), RuleKind::Allow));
    /// # Ok::<(), mux_permission::RuleError>(())
    /// ```
    pub fn reaches(&self, name: &str, family: Option<Family>, kind: RuleKind) -> bool {
        if self.applies_to(name) {
            return true;
        }
        if self.tool_is_prefix {
            return false;
        }
        if Family::alias_of(&self.tool) == Some(name) {
            return true;
        }
        let Some(family) = family else {
            return false;
        };
        Family::named(&self.tool) == Some(family)
            || (kind != RuleKind::Allow && Family::of_member(&self.tool) == Some(family))
    }

    /// Whether the tool part names something known: a family, a built-in tool, one of Claude
    /// Code's tools, an MCP tool, or a prefix (`name*`).
    pub fn names_known_tool(&self) -> bool {
        self.tool_is_prefix || crate::family::is_known_tool(&self.tool)
    }

    pub(crate) fn spec(&self) -> Option<&Specifier> {
        self.specifier.as_ref()
    }
}

impl Specifier {
    /// Compiles every form that applies. For a built-in tool (`kind` known), the form its
    /// subject needs must compile.
    fn compile(raw: &str, kind: Option<&str>) -> Result<Self, RuleProblem> {
        if kind == Some("url") && !raw.trim().starts_with("domain:") {
            return Err(RuleProblem::NotADomain);
        }
        if let Some(domain) = raw.trim().strip_prefix("domain:") {
            return Ok(Self {
                raw: raw.to_owned(),
                command: None,
                path: None,
                domain: Some(DomainPattern::parse(domain)?),
            });
        }
        let command = CommandPattern::parse(raw);
        let path = PathPattern::parse(raw);
        match (kind, &command, &path) {
            (Some("command"), Err(err), _) => return Err(RuleProblem::Command(err.clone())),
            (Some("path"), _, Err(err)) => return Err(RuleProblem::Path(err.clone())),
            _ => {}
        }
        match (command, path) {
            (Err(command), Err(path)) => Err(RuleProblem::Specifier { command, path }),
            (command, path) => Ok(Self {
                raw: raw.to_owned(),
                command: command.ok(),
                path: path.ok(),
                domain: None,
            }),
        }
    }
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for Rule {}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> Option<RuleProblem> {
        Rule::parse(text).err().map(|e| e.problem)
    }

    #[test]
    fn syntax() {
        assert!(Rule::parse("Bash").is_ok());
        assert!(Rule::parse("Bash(git status)").is_ok());
        assert!(Rule::parse("Bash(echo (x))").is_ok());
        assert!(Rule::parse("WebFetch(domain:example.com)").is_ok());
        assert_eq!(problem(""), Some(RuleProblem::Empty));
        assert_eq!(problem("Bash(git"), Some(RuleProblem::Syntax));
        assert_eq!(problem("Bash()"), Some(RuleProblem::EmptySpecifier));
        assert_eq!(
            problem("Ba sh"),
            Some(RuleProblem::ToolName("Ba sh".into()))
        );
        assert!(matches!(
            problem("WebFetch(domain:)"),
            Some(RuleProblem::Domain(_))
        ));
        assert!(matches!(
            problem("Custom(a[ 'b)"),
            Some(RuleProblem::Specifier { .. })
        ));
        assert!(matches!(problem("Read(./a[)"), Some(RuleProblem::Path(_))));
        assert!(matches!(problem("Read(../x)"), Some(RuleProblem::Path(_))));
        assert!(matches!(
            problem("Bash(echo 'x)"),
            Some(RuleProblem::Command(_))
        ));
        assert!(matches!(
            problem("WebFetch(https://x.com)"),
            Some(RuleProblem::NotADomain)
        ));
        assert!(matches!(
            problem("read_file(./a[)"),
            Some(RuleProblem::Path(_))
        ));
        assert!(matches!(
            problem("web_fetch(x.com)"),
            Some(RuleProblem::NotADomain)
        ));
        assert!(Rule::parse("bash(git diff:*)").is_ok());
    }

    #[test]
    fn tool_names_and_mcp_servers() {
        let exact =
            Rule::parse("mcp__github__create_issue").unwrap_or_else(|e| unreachable!("{e}"));
        assert!(exact.applies_to("mcp__github__create_issue"));
        assert!(!exact.applies_to("mcp__github__create_issue2"));
        let star = Rule::parse("mcp__github__*").unwrap_or_else(|e| unreachable!("{e}"));
        assert!(star.applies_to("mcp__github__anything"));
        assert!(!star.applies_to("mcp__gitlab__anything"));
        let server = Rule::parse("mcp__github").unwrap_or_else(|e| unreachable!("{e}"));
        assert!(server.applies_to("mcp__github__x"));
        assert!(!server.applies_to("mcp__githubx__x"));
        assert!(!Rule::parse("Bash").is_ok_and(|r| r.applies_to("Bash2")));
    }
}
