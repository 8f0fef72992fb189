//! A call's subject, read once per check: a parsed script, a resolved path or a URL host.

use std::path::{Path, PathBuf};

use mux_tool::Subject;

use crate::command::{Analysis, analyze};
use crate::domain::host_of;
use crate::path::{PathContext, resolve};
use crate::protected::{Protected, protected};
use crate::rule::Rule;

/// The subject in the form rules match against.
#[derive(Debug)]
pub(crate) enum Prepared {
    /// Nothing beyond the tool name.
    Nothing,
    /// A shell script.
    Command(Analysis),
    /// A path: its lexical absolute form, and its symlink-resolved form when resolution worked.
    Path {
        lexical: PathBuf,
        resolved: Result<PathBuf, String>,
    },
    /// A URL's host, when it has one a rule can trust.
    Url(Result<String, String>),
}

impl Prepared {
    pub(crate) fn new(subject: &Subject, context: &PathContext) -> Self {
        match subject {
            Subject::Command(script) => Self::Command(analyze(script)),
            Subject::Path(path) => Self::path(path, context),
            Subject::Url(url) => Self::Url(
                host_of(url).ok_or_else(|| format!("the URL `{url}` has no host a rule can check")),
            ),
            _ => Self::Nothing,
        }
    }

    fn path(path: &Path, context: &PathContext) -> Self {
        let lexical = context.lexical(path);
        let joined = match (path.strip_prefix("~"), context.home()) {
            (Ok(rest), Some(home)) => home.join(rest),
            _ => context.root().join(path),
        };
        let resolved = resolve(&joined)
            .map_err(|err| format!("the path `{}` cannot be resolved: {err}", path.display()));
        Self::Path { lexical, resolved }
    }

    /// Why no rule can allow this subject, if something makes it at most ask.
    pub(crate) fn hazard(&self) -> Option<String> {
        match self {
            Self::Command(analysis) => analysis.hazards.first().cloned(),
            Self::Path {
                resolved: Err(why), ..
            }
            | Self::Url(Err(why)) => Some(why.clone()),
            _ => None,
        }
    }

    /// Why part of a script cannot be read at all, so that every deny rule on commands matches
    /// it (a shell reading standard input, a builtin evaluating an expanding argument).
    pub(crate) fn unreadable(&self) -> Option<&str> {
        match self {
            Self::Command(analysis) => analysis.unreadable.as_deref(),
            _ => None,
        }
    }

    /// Whether a deny rule cannot be ruled out: part of the subject could not be read, or the
    /// rule's specifier has no form for this kind of subject (a `domain:` rule on a command,
    /// a command rule on a tool with no subject), so the rule might still be meant for it.
    pub(crate) fn hides_from(&self, rule: &Rule) -> bool {
        let Some(spec) = rule.spec() else {
            return false;
        };
        match self {
            Self::Command(analysis) => spec.command.is_none() || analysis.opaque,
            Self::Path { resolved, .. } => spec.path.is_none() || resolved.is_err(),
            Self::Url(host) => spec.domain.is_none() || host.is_err(),
            Self::Nothing => true,
        }
    }

    /// Whether a deny or ask rule matches anything the subject touches: any command anywhere
    /// in a script (by base name too), the path before or after resolving symlinks (in any
    /// case), the host or any subdomain of it.
    pub(crate) fn caught_by(&self, rule: &Rule, context: &PathContext) -> bool {
        let Some(spec) = rule.spec() else {
            return true;
        };
        match self {
            Self::Nothing => false,
            Self::Command(analysis) => spec
                .command
                .as_ref()
                .is_some_and(|pattern| analysis.caught_by(pattern)),
            Self::Path { lexical, resolved } => spec.path.as_ref().is_some_and(|pattern| {
                pattern.matches_in(lexical, context, false, true)
                    || resolved
                        .as_ref()
                        .is_ok_and(|real| pattern.matches_in(real, context, true, true))
            }),
            Self::Url(host) => match (&spec.domain, host) {
                (Some(domain), Ok(host)) => domain.covers(host),
                _ => false,
            },
        }
    }

    /// Whether the path is one that governs the agent (see [`crate::protected`]), before or
    /// after resolving symlinks.
    pub(crate) fn protected<'a>(
        &self,
        settings_files: impl Iterator<Item = &'a Path> + Clone,
    ) -> Option<Protected> {
        let Self::Path { lexical, resolved } = self else {
            return None;
        };
        protected(lexical, settings_files.clone()).or_else(|| {
            resolved
                .as_ref()
                .ok()
                .and_then(|real| protected(real, settings_files))
        })
    }

    /// Whether an allow rule covers the top-level command `index` of a script: its words
    /// match, and the program's model explains every other word (see
    /// [`crate::command::covers`]).
    pub(crate) fn command_allowed_by(analysis: &Analysis, index: usize, rule: &Rule) -> bool {
        match rule.spec() {
            None => analysis.covered_by(index, None),
            Some(spec) => spec
                .command
                .as_ref()
                .is_some_and(|p| analysis.covered_by(index, Some(p))),
        }
    }

    /// Whether an allow rule covers a non-command subject exactly: the resolved path (exact
    /// case) or the host.
    pub(crate) fn allowed_by(&self, rule: &Rule, context: &PathContext) -> bool {
        let Some(spec) = rule.spec() else {
            return true;
        };
        match self {
            Self::Nothing | Self::Command(_) => false,
            Self::Path { resolved, .. } => match (&spec.path, resolved) {
                (Some(pattern), Ok(real)) => pattern.matches_in(real, context, true, false),
                _ => false,
            },
            Self::Url(host) => match (&spec.domain, host) {
                (Some(domain), Ok(host)) => domain.allows(host),
                _ => false,
            },
        }
    }

    /// Whether `rule` alone matches this subject, as a settings-file example expects: every
    /// command of a script, the path, or the host.
    pub(crate) fn matched_by(&self, rule: &Rule, context: &PathContext) -> bool {
        match self {
            Self::Command(analysis) => {
                !analysis.commands.is_empty()
                    && (0..analysis.commands.len())
                        .all(|index| Self::command_allowed_by(analysis, index, rule))
            }
            Self::Nothing => rule.spec().is_none(),
            _ => self.allowed_by(rule, context),
        }
    }
}
