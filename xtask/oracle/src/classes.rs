//! The search's findings, labelled with the class of issue 40 they belong to, by the mutation
//! operators that produced them and what the run did; and their rendering for the report.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::compare::{Finding, Kind};
use crate::mutate::{Op, Ops};

/// The classes of issue 40 the search is meant to reach, and the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Class {
    /// 1: a `#` after a line continuation or escaped blank hides a shell payload.
    ShellComment,
    /// 1b: a line continuation or escaped blank alone (no `#`) hides a shell payload, e.g. a
    /// continuation at the start of a line.
    ShellContinuation,
    /// 2: awk's `/` read as division hides a `system()`, pipe, `getline` or `print > file`.
    AwkSlash,
    /// 3: an option's arity misread swallows `--output=F` (or another write).
    OptionArity,
    /// Any other disagreement.
    Other,
}

impl Class {
    /// Every class, in report order.
    pub(crate) const ALL: [Class; 5] = [
        Class::ShellComment,
        Class::ShellContinuation,
        Class::AwkSlash,
        Class::OptionArity,
        Class::Other,
    ];

    /// A short label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Class::ShellComment => "class 1: comment after a continuation or escaped blank",
            Class::ShellContinuation => "class 1b: continuation or escaped blank, no comment",
            Class::AwkSlash => "class 2: awk regex read as division",
            Class::OptionArity => "class 3: option arity",
            Class::Other => "other",
        }
    }
}

/// Whether a finding is a program run by a shell's `-c` (awk's `system()` and pipes).
fn via_sh_c(finding: &Finding) -> bool {
    finding.detail.contains("[\"sh\", \"-c\"")
}

fn runs(finding: &Finding) -> bool {
    matches!(finding.kind, Kind::Canary | Kind::Denied | Kind::Exec)
}

/// The class of a disagreement: by the operators that built the command (or, for a part a
/// splice carried in from another entry, the marks those operators leave in the text), and
/// what ran.
pub(crate) fn classify(program: &str, ops: Ops, text: &str, findings: &[Finding]) -> Class {
    let wrote = findings.iter().any(|f| f.kind == Kind::Write);
    let escaped = ops.any(&[Op::Continuation, Op::EscapedSpace])
        || ["\\\n", "\\\t", "\\ "].iter().any(|e| text.contains(e));
    let hashed = ops.any(&[Op::Hash, Op::Comment]) || hash_after_escape(text);
    if program == "awk"
        && ops.has(Op::AwkSlash)
        && (wrote || findings.iter().any(via_sh_c) || findings.iter().any(runs))
        && !(ops.has(Op::Payload) && shell_level_run(findings))
    {
        return Class::AwkSlash;
    }
    if escaped && hashed && shell_level_run(findings) {
        return Class::ShellComment;
    }
    if ops.any(&[Op::Arity, Op::OptionSpelling]) && wrote {
        return Class::OptionArity;
    }
    if escaped && shell_level_run(findings) {
        return Class::ShellContinuation;
    }
    Class::Other
}

/// Whether a `#` follows a continuation or escaped blank (blanks between allowed).
fn hash_after_escape(text: &str) -> bool {
    ["\\\n", "\\\t", "\\ "].iter().any(|e| {
        text.match_indices(e).any(|(i, m)| {
            text[i + m.len()..]
                .trim_start_matches([' ', '\t'])
                .starts_with('#')
        })
    })
}

/// Whether a program ran straight from the shell (not through a `sh -c` of awk's).
fn shell_level_run(findings: &[Finding]) -> bool {
    findings.iter().any(|f| runs(f) && !via_sh_c(f)) && !findings.iter().any(via_sh_c)
}

/// One disagreement the search found.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    /// The command.
    pub(crate) command: String,
    /// The seed program it descends from.
    pub(crate) program: &'static str,
    /// The operators that built it.
    pub(crate) ops: Ops,
    /// What it did that the analysis did not predict.
    pub(crate) findings: Vec<Finding>,
    /// Its class.
    pub(crate) class: Class,
}

impl Found {
    /// The shape a class counts distinct disagreements by: program, operators and kinds of
    /// finding.
    fn shape(&self) -> String {
        let kinds: BTreeSet<&str> = self.findings.iter().map(|f| f.kind.label()).collect();
        format!(
            "{} [{}] {}",
            self.program,
            self.ops.label(),
            kinds.into_iter().collect::<Vec<_>>().join(", ")
        )
    }
}

/// Renders the findings per class: a summary (counts and three examples per class) and the
/// full list (every finding with its class label).
pub(crate) fn render(found: &[Found]) -> (String, String) {
    let mut summary = String::new();
    let mut full = String::new();
    let _ = writeln!(
        summary,
        "\n{:<58} {:>9} {:>7}",
        "search disagreements by class", "commands", "shapes"
    );
    for class in Class::ALL {
        let group: Vec<&Found> = found.iter().filter(|f| f.class == class).collect();
        let shapes: BTreeMap<String, usize> = group.iter().fold(BTreeMap::new(), |mut m, f| {
            *m.entry(f.shape()).or_default() += 1;
            m
        });
        let _ = writeln!(
            summary,
            "{:<58} {:>9} {:>7}",
            class.label(),
            group.len(),
            shapes.len()
        );
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(full, "\n[{}] {} commands", class.label(), group.len());
        for (shape, n) in &shapes {
            let _ = writeln!(full, "  shape {shape}: {n}");
        }
        for f in &group {
            let _ = writeln!(
                full,
                "  [{}] {:?}  ({} <- {})",
                class_number(class),
                f.command,
                f.program,
                f.ops.label()
            );
            for finding in &f.findings {
                let _ = writeln!(full, "      {finding}");
            }
        }
    }
    for class in Class::ALL {
        let group: Vec<&Found> = found.iter().filter(|f| f.class == class).collect();
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(summary, "\n[{}] examples:", class.label());
        for f in shortest(&group, 3) {
            let first = f
                .findings
                .iter()
                .min_by_key(|x| x.kind)
                .map(ToString::to_string)
                .unwrap_or_default();
            let _ = writeln!(
                summary,
                "  {:?}  ({})\n      {first}",
                f.command,
                f.ops.label()
            );
        }
    }
    (summary, full)
}

/// The class's number as the report's label uses it.
fn class_number(class: Class) -> &'static str {
    match class {
        Class::ShellComment => "class 1",
        Class::ShellContinuation => "class 1b",
        Class::AwkSlash => "class 2",
        Class::OptionArity => "class 3",
        Class::Other => "other",
    }
}

/// The `n` shortest commands of a group, in first-found order among equals.
fn shortest<'a>(group: &[&'a Found], n: usize) -> Vec<&'a Found> {
    let mut sorted: Vec<&Found> = group.to_vec();
    sorted.sort_by_key(|f| f.command.len());
    sorted.truncate(n);
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(kind: Kind, detail: &str) -> Finding {
        Finding {
            kind,
            detail: detail.to_owned(),
        }
    }

    #[test]
    fn findings_are_classed_by_operators_and_what_ran() {
        let shell = Ops::default()
            .with(Op::Continuation)
            .with(Op::Hash)
            .with(Op::Payload);
        let touch = [finding(
            Kind::Denied,
            "/usr/bin/touch [\"touch\", \"CANARY-RAN\"]",
        )];
        assert_eq!(
            classify("echo", shell, "echo ok\\\n#; touch x", &touch),
            Class::ShellComment
        );
        // A spelling a splice carried in is read from the text.
        let spliced = Ops::default().with(Op::Splice);
        assert_eq!(
            classify("jq", spliced, "jq . x\nuniq y\\\t## | touch x", &touch),
            Class::ShellComment
        );
        assert_eq!(
            classify("jq", spliced, "jq . x | touch x", &touch),
            Class::Other
        );
        let awk = Ops::default().with(Op::AwkSlash).with(Op::AwkPayload);
        let system = [
            finding(Kind::Canary, "marker: ran: ./canary"),
            finding(Kind::Exec, "/bin/sh [\"sh\", \"-c\", \"./canary\"]"),
        ];
        assert_eq!(
            classify(
                "awk",
                awk,
                "awk 'BEGIN { print /#/; system(\"./canary\") }'",
                &system
            ),
            Class::AwkSlash
        );
        let arity = Ops::default().with(Op::Arity);
        let wrote = [finding(Kind::Write, "openat /tmp/w/out.txt = 3")];
        let diff = "git diff -U --output=out.txt";
        assert_eq!(classify("git", arity, diff, &wrote), Class::OptionArity);
        assert_eq!(
            classify("git", Ops::default().with(Op::Quote), diff, &wrote),
            Class::Other
        );
        assert_eq!(
            classify("echo", arity, "echo a; touch x", &touch),
            Class::Other
        );
        let continued = Ops::default().with(Op::Continuation).with(Op::Payload);
        assert_eq!(
            classify("jq", continued, "jq . x\n\\\ntouch x", &touch),
            Class::ShellContinuation
        );
    }

    #[test]
    fn the_rendering_counts_commands_and_shapes_per_class() {
        let f = |command: &str| Found {
            command: command.to_owned(),
            program: "git",
            ops: Ops::default().with(Op::Arity),
            findings: vec![finding(Kind::Write, "openat /tmp/w/out.txt = 3")],
            class: Class::OptionArity,
        };
        let (summary, full) = render(&[
            f("git diff -U --output=out.txt"),
            f("git log -U --output=x"),
        ]);
        assert!(summary.contains("class 3: option arity"), "{summary}");
        assert!(
            summary
                .lines()
                .any(|l| l.starts_with("class 3") && l.ends_with(" 2       1")),
            "{summary}"
        );
        assert!(
            full.contains("[class 3] \"git diff -U --output=out.txt\""),
            "{full}"
        );
    }
}
