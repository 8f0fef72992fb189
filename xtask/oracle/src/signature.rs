//! What counts as new behaviour for the search: the analysis' signature of a candidate (its
//! verdict, hazards and the shape of the commands it predicts), the lexical skeleton of its
//! text (where two parsers can differ), and the outcome class of a run under strace.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use mux_permission::Verdict;
use mux_permission::command::analyze;

use crate::fixture::WORK_DIR;
use crate::policy::base_name;
use crate::rng::fnv;
use crate::sandbox::Observed;
use crate::trace::Event;

/// The analysis' reading of one candidate.
#[derive(Clone, Debug)]
pub(crate) struct Reading {
    /// The policy's verdict.
    pub(crate) verdict: Verdict,
    /// A hash of the verdict, the hazards and the predicted commands' shape.
    pub(crate) signature: u64,
    /// The programs the analysis predicts (base names of its simple commands).
    pub(crate) programs: BTreeSet<String>,
}

/// Reads `text` the way the analysis does, under the verdict the policy gave it.
pub(crate) fn reading(verdict: Verdict, text: &str) -> Reading {
    let analysis = analyze(text);
    let mut key = format!("{verdict:?}|");
    let hazards: BTreeSet<String> = analysis
        .hazards
        .iter()
        .map(|h| normalize_hazard(h))
        .collect();
    for hazard in &hazards {
        key.push_str(hazard);
        key.push('|');
    }
    let mut programs = BTreeSet::new();
    let mut shape = BTreeSet::new();
    for words in &analysis.commands {
        let Some(first) = words.first() else { continue };
        let name = base_name(first);
        programs.insert(name.to_owned());
        let sub = if name == "git" {
            words
                .iter()
                .skip(1)
                .find(|w| !w.starts_with('-'))
                .map_or("", String::as_str)
        } else {
            ""
        };
        shape.insert(format!("{name}:{sub}"));
    }
    let _ = write!(
        key,
        "{}|{}|{}|{}",
        shape.into_iter().collect::<Vec<_>>().join(";"),
        analysis.commands.len().min(3),
        analysis.opaque,
        analysis.unreadable.is_some()
    );
    Reading {
        verdict,
        signature: fnv(key.as_bytes()),
        programs,
    }
}

/// A hazard's text with its quoted parts (user words) cut, so the signature counts kinds of
/// hazard rather than spellings.
fn normalize_hazard(hazard: &str) -> String {
    let mut out = String::new();
    for (i, part) in hazard.split('`').enumerate() {
        if i % 2 == 1 {
            out.push('…');
        } else {
            out.push_str(part);
        }
    }
    out
}

/// The text's lexical skeleton: every run of letters, digits, `_`, `.`, `,`, `=` and `-`
/// collapsed to `w`; blanks, quotes, backslashes, `#`, `/`, `$`, brackets and operators kept.
/// Two candidates with one skeleton differ only in words, not in where parsers can disagree.
pub(crate) fn skeleton(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_word = false;
    for c in text.chars() {
        if c.is_alphanumeric() || matches!(c, '_' | '.' | ',' | '=' | '-' | ':' | '%' | '~') {
            if !in_word {
                out.push('w');
                in_word = true;
            }
        } else {
            out.push(c);
            in_word = false;
        }
    }
    out
}

/// The class of what a run did, for coverage: the exit code, the programs executed, the files
/// changed (by call and path, digits folded), the canary, the time limit.
pub(crate) fn outcome_class(program: &str, observed: &Observed) -> u64 {
    let mut parts: BTreeSet<String> = BTreeSet::new();
    for event in &observed.events {
        match event {
            Event::Exec { path, .. } => {
                parts.insert(format!("x:{}", base_name(path)));
            }
            Event::Change { call, paths, .. } => {
                let named: Vec<String> = paths
                    .iter()
                    .map(|p| {
                        let relative = p.strip_prefix(WORK_DIR).unwrap_or(p);
                        relative
                            .chars()
                            .map(|c| if c.is_ascii_digit() { '0' } else { c })
                            .collect()
                    })
                    .collect();
                parts.insert(format!("c:{call}:{}", named.join(">")));
            }
        }
    }
    let key = format!(
        "{program}|{:?}|{}|{}|{}",
        observed.status,
        observed.timed_out,
        observed.marker.is_some(),
        parts.into_iter().collect::<Vec<_>>().join("|")
    );
    fnv(key.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skeletons_keep_what_parsers_read_and_fold_words() {
        assert_eq!(skeleton("echo ok"), skeleton("ls src"));
        assert_eq!(skeleton("echo ok\\\n#; ./canary"), "w w\\\n#; w/w");
        assert_ne!(skeleton("echo ok\\\n#x"), skeleton("echo ok\\\t#x"));
    }

    #[test]
    fn the_signature_tells_verdicts_and_hazards_apart() {
        let plain = reading(Verdict::Allow, "echo ok");
        assert_eq!(
            plain.programs.iter().collect::<Vec<_>>(),
            vec![&"echo".to_owned()]
        );
        assert_eq!(
            plain.signature,
            reading(Verdict::Allow, "echo hello").signature
        );
        assert_ne!(
            plain.signature,
            reading(Verdict::Ask, "echo ok > out.txt").signature
        );
        assert_ne!(plain.signature, reading(Verdict::Allow, "ls").signature);
    }

    #[test]
    fn outcome_classes_differ_by_exit_code_and_writes() {
        let quiet = Observed {
            status: Some(0),
            ..Observed::default()
        };
        let failed = Observed {
            status: Some(1),
            ..Observed::default()
        };
        let wrote = Observed {
            status: Some(0),
            events: vec![Event::Change {
                call: "openat".into(),
                paths: vec!["/tmp/w/out.txt".into()],
                result: "3".into(),
                line: String::new(),
            }],
            ..Observed::default()
        };
        let a = outcome_class("git", &quiet);
        assert_ne!(a, outcome_class("git", &failed));
        assert_ne!(a, outcome_class("git", &wrote));
        assert_eq!(a, outcome_class("git", &quiet));
    }
}
