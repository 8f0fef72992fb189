//! Issue 40, the sed counterpart of classes 2 and 4: the sed checker reads a script the way
//! GNU sed compiles it. GNU sed is its own parse-only oracle: `sed --debug -n SCRIPT
//! </dev/null` compiles the script (exit 0) without running a command, and `sed --sandbox`
//! rejects a script at compile time exactly when GNU sed's reading holds `e`, `r`, `R`,
//! `w`, `W`, `s///e` or `s///w`. A script the checker allows (`sed -n SCRIPT` under
//! `Bash(sed:*)`) must compile to no such command; run for real on one line in a throwaway
//! directory it must not run a command or write a file, and one that runs `touch` is denied.
//! The corpus holds the spellings where readings part; the search mutates allowed scripts
//! with them (`MUX_SEARCH_ITERATIONS`, `MUX_SEARCH_SEED`).

use std::process::{Command, Stdio};

use mux_permission::{Permissions, Verdict};

use super::real_programs::{
    self, Rng, all_allowed, insert_after, iterations, none_disagree, permissions, quote, verdict,
};

/// GNU sed's own reading of `script`: whether it compiles, and whether it holds a command
/// that runs a program or touches a file.
fn gnu_reading(script: &str) -> (bool, bool) {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &str| {
        Command::new("sed")
            .args([extra, "-n", "-e", script])
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let compiles = run("--debug").status.success();
    let sandbox = run("--sandbox");
    let touches = String::from_utf8_lossy(&sandbox.stderr).contains("sandbox mode");
    (compiles, compiles && touches)
}

/// Where the checker and GNU sed part on one script; `None` when they agree.
fn disagreement(permissions: &Permissions, script: &str, touches: bool) -> Option<String> {
    let verdict = verdict(permissions, &format!("sed -n {}", quote(script)));
    // A script GNU sed's sandbox accepts can neither run a command nor touch a file, so only
    // the others are run for real.
    if !touches {
        return None;
    }
    let outcome = real_programs::run("sed", &["-n", "-e", script], "x\n", &[]);
    let unsafe_allow = verdict == Verdict::Allow;
    let unseen_command = outcome.ran_command && verdict != Verdict::Deny;
    (unsafe_allow || unseen_command).then(|| {
        let class = if unsafe_allow {
            "UNSAFE ALLOW"
        } else {
            "DENY MISSED"
        };
        format!(
            "{class} {script:?}: {verdict:?}; GNU sed reads e/r/w: {touches}, ran a command: {}, wrote a file: {}",
            outcome.ran_command, outcome.wrote
        )
    })
}

/// Scripts where a reading can part from GNU sed's.
const CORPUS: &[&str] = &[
    "e touch CANARY",
    "s/.*/touch CANARY/e",
    "s/x/y/w out",
    "w out",
    "W out",
    "r /etc/hostname",
    "R /etc/hostname",
    // A bracket expression holding the delimiter.
    "/[/]/e touch CANARY",
    "s/[/]/x/;e touch CANARY",
    "\\%[%]%e touch CANARY",
    // `;` and `}` inside regexes and replacements.
    "/;/!{s/}/;/;e touch CANARY\n}",
    "s/;/}/g;w out",
    "\\;x;p;e touch CANARY",
    // Text of a, i, c and e with continuations.
    "1i\\\ns|x\ne touch CANARY\ns|||",
    "a foo\\\\\ne touch CANARY",
    "e echo \\\ntouch CANARY",
    "e tou\\\nch CANARY",
    "c\\\nfoo\\\n;e touch CANARY",
    // Comments, `#n`, labels.
    "#n\ne touch CANARY",
    "p # x\ne touch CANARY",
    "s/a/b/ # x\ne touch CANARY",
    ":a;e touch CANARY",
    "b end;e touch CANARY;:end",
    ":a\te touch CANARY",
    "v 4.2 e touch CANARY",
    // Flags with blanks between them.
    "s/x/y/g e",
    "s/x/y/ w out",
    // Harmless, and allowed: STAYS_ALLOWED.
];

/// Scripts of the corpus that must be allowed: the checker does not refuse everything.
const STAYS_ALLOWED: &[&str] = &[
    "/[/]/p",
    "s/[/]/x/gp",
    "a foo\\\ne touch CANARY",
    "s/a/b/g p",
    "p # e touch CANARY",
    "$!N;P;D",
];

#[test]
fn tricky_scripts_are_allowed_only_when_gnu_sed_reads_no_command() {
    if !real_programs::require("sed") {
        return;
    }
    let permissions = permissions(&["Bash(sed:*)"]);
    // The whole corpus: the plain programs that must stay allowed are part of it.
    let corpus = [CORPUS, STAYS_ALLOWED].concat();
    let failures: Vec<String> = corpus
        .iter()
        .filter_map(|s| disagreement(&permissions, s, gnu_reading(s).1))
        .collect();
    none_disagree("sed corpus", &failures, corpus.len(), "scripts");
    all_allowed(&permissions, STAYS_ALLOWED, |script| {
        format!("sed -n {}", quote(script))
    });
    // The corpus reaches real behaviour: GNU sed reads a command that touches files in most.
    let touching = corpus.iter().filter(|s| gnu_reading(s).1).count();
    assert!(touching >= 20, "only {touching} corpus scripts hold e/r/w");
}

/// Allowed scripts the search starts from.
const SEEDS: &[&str] = &[
    "1,5p",
    "/foo/p",
    "s/a/b/gp",
    "s/(a)/\\1/p",
    "$p",
    "p;n",
    "1~2{p;d}",
    "y/ab/cd/",
    ":a;N;ba",
];

/// Spellings where a checker and GNU sed may part.
const DISGUISES: &[&str] = &[
    ";",
    "}",
    "{",
    "#",
    "# c\n",
    "\\\n",
    "\n",
    "\t",
    " ",
    "a foo\\\n",
    "a\\\n",
    "i\\\nx\\\n",
    "/[/]/",
    "\\%;%",
    "s/;/}/;",
    "s/[/]/;/;",
    "y/;/}/;",
    ":a;",
    "b a;",
    "#n\n",
    "\\",
];

/// What the disguises may hide.
const PAYLOADS: &[&str] = &[
    "e touch CANARY",
    "s/.*/touch CANARY/e",
    "w out",
    "s/x*/y/w out",
    "1e touch CANARY",
    "W out",
];

/// Where a mutation puts sed pieces (see [`real_programs::mutate`]).
fn splice(rng: &mut Rng, script: &str, disguise: &str, payload: &str, kind: usize) -> String {
    match kind {
        2 => insert_after(
            rng,
            script,
            &[';', '{', '\n'],
            &format!("{disguise}{payload}\n"),
        ),
        3 => format!("{script}\n{disguise}{payload}"),
        _ => insert_after(rng, script, &['/', ';', ' ', 'p'], disguise),
    }
}

#[test]
fn mutated_scripts_are_allowed_only_when_gnu_sed_reads_no_command() {
    if !real_programs::require("sed") {
        return;
    }
    let permissions = permissions(&["Bash(sed:*)"]);
    let mut rng = Rng::seeded(40_003);
    let runs = iterations(300);
    let mut failures = Vec::new();
    let mut touching = 0;
    for _ in 0..runs {
        let script = real_programs::mutate(&mut rng, SEEDS, DISGUISES, PAYLOADS, splice);
        let touches = gnu_reading(&script).1;
        touching += usize::from(touches);
        if let Some(failure) = disagreement(&permissions, &script, touches) {
            failures.push(failure);
        }
    }
    let things = format!("mutants ({touching} holding e/r/w as GNU sed reads them)");
    none_disagree("sed search", &failures, runs, &things);
    assert!(runs == 0 || touching > 0, "no mutant reached e/r/w");
}
