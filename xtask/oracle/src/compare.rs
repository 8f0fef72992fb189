//! Comparing what a run did with what the analysis vouched for.

use std::collections::BTreeSet;
use std::fmt;

use crate::fixture::{MARKER, WORK_DIR};
use crate::policy::{DENIED_PROGRAMS, allowed_change, base_name, helpers};
use crate::sandbox::Observed;
use crate::trace::Event;

/// What kind of disagreement a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    /// A canary ran: the payload of an attack executed.
    Canary,
    /// A program a deny rule names ran, unpredicted.
    Denied,
    /// A program ran that is not one of the analysed commands nor their helpers.
    Exec,
    /// A file was created, written, removed, renamed or changed.
    Write,
    /// The run could not be observed (no trace of the shell starting).
    Unobserved,
}

impl Kind {
    /// Every kind, in report order.
    pub(crate) const ALL: [Kind; 5] = [
        Kind::Canary,
        Kind::Denied,
        Kind::Exec,
        Kind::Write,
        Kind::Unobserved,
    ];

    /// A short name.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Canary => "canary ran",
            Kind::Denied => "denied program ran",
            Kind::Exec => "unpredicted exec",
            Kind::Write => "unpredicted write",
            Kind::Unobserved => "unobserved",
        }
    }
}

/// One thing a run did that the analysis did not predict.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Finding {
    /// Its kind.
    pub(crate) kind: Kind,
    /// What happened.
    pub(crate) detail: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.label(), self.detail)
    }
}

/// The findings of one run of a command whose analysis predicted `programs`.
pub(crate) fn findings(
    programs: &BTreeSet<String>,
    observed: &Observed,
    git_exec_path: &str,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if observed.unobserved {
        out.push(Finding {
            kind: Kind::Unobserved,
            detail: "no trace shows the shell starting".into(),
        });
    }
    if let Some(marker) = &observed.marker {
        out.push(Finding {
            kind: Kind::Canary,
            detail: format!("marker: {}", marker.lines().next().unwrap_or("").trim()),
        });
    }
    for event in &observed.events {
        match event {
            Event::Exec { path, argv } => {
                let name = base_name(path);
                if programs.contains(name)
                    || programs.iter().any(|p| helpers(p, path, git_exec_path))
                {
                    continue;
                }
                let kind = if is_canary(path) {
                    Kind::Canary
                } else if DENIED_PROGRAMS.contains(&name) {
                    Kind::Denied
                } else {
                    Kind::Exec
                };
                out.push(Finding {
                    kind,
                    detail: format!("{path} {argv:?}"),
                });
            }
            Event::Change {
                call,
                paths,
                result,
                ..
            } => {
                if allowed_change(programs, call, paths, result) || is_marker(paths) {
                    continue;
                }
                out.push(Finding {
                    kind: Kind::Write,
                    detail: format!("{call} {} = {result}", paths.join(" -> ")),
                });
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|finding| seen.insert(finding.clone()));
    out
}

/// Whether a change is the canary writing its marker (reported as the canary itself).
fn is_marker(paths: &[String]) -> bool {
    paths.len() == 1 && paths[0] == format!("{WORK_DIR}/{MARKER}")
}

/// Whether `path` is one of the fixture's canary programs.
fn is_canary(path: &str) -> bool {
    let relative = path
        .strip_prefix(WORK_DIR)
        .map(|p| p.trim_start_matches('/'))
        .or_else(|| path.strip_prefix("./"))
        .unwrap_or(path);
    relative == "canary" || relative.starts_with("hooks/")
}

/// The kind a command's findings are grouped under: the most severe.
pub(crate) fn primary(findings: &[Finding]) -> Option<Kind> {
    findings.iter().map(|f| f.kind).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn predicted_execs_are_not_findings_and_others_are() {
        let observed = Observed {
            events: vec![
                Event::Exec {
                    path: "/usr/bin/git".into(),
                    argv: vec!["git".into()],
                },
                Event::Exec {
                    path: "/usr/bin/sh".into(),
                    argv: vec!["sh".into(), "-c".into(), "./canary".into()],
                },
                Event::Exec {
                    path: "/tmp/w/canary".into(),
                    argv: vec!["./canary".into()],
                },
            ],
            marker: Some("ran: ./canary\n".into()),
            ..Observed::default()
        };
        let found = findings(&programs(&["git"]), &observed, "/usr/lib/git-core");
        let kinds: Vec<Kind> = found.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, vec![Kind::Canary, Kind::Exec, Kind::Canary]);
        assert_eq!(primary(&found), Some(Kind::Canary));
    }

    #[test]
    fn a_quiet_run_has_no_findings() {
        let observed = Observed {
            events: vec![Event::Exec {
                path: "/usr/bin/sed".into(),
                argv: vec!["sed".into(), "p".into()],
            }],
            ..Observed::default()
        };
        assert!(findings(&programs(&["sed"]), &observed, "").is_empty());
    }

    #[test]
    fn a_write_is_a_finding() {
        let observed = Observed {
            events: vec![Event::Change {
                call: "openat".into(),
                paths: vec!["/tmp/w/.git/hooks/pre-commit".into()],
                result: "3".into(),
                line: String::new(),
            }],
            ..Observed::default()
        };
        let found = findings(&programs(&["git"]), &observed, "");
        assert_eq!(primary(&found), Some(Kind::Write));
    }

    #[test]
    fn a_denied_program_that_ran_is_a_breach() {
        let observed = Observed {
            events: vec![Event::Exec {
                path: "/usr/bin/touch".into(),
                argv: vec!["touch".into(), "x".into()],
            }],
            ..Observed::default()
        };
        let found = findings(&programs(&["echo"]), &observed, "");
        assert_eq!(primary(&found), Some(Kind::Denied));
        assert!(findings(&programs(&["touch"]), &observed, "").is_empty());
    }
}
