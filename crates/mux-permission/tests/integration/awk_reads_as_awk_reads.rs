//! Issue 40, class 2: the awk checker reads a program the way awk reads it. Every program
//! here is judged under `Bash(awk:*)` (with `touch`, `rm` and `curl` denied) and then run by
//! the real `awk` in a throwaway directory: a program that is allowed must neither run a
//! command (which creates `CANARY`) nor write a file, and one that runs `touch` must be
//! denied. The corpus holds the spellings where a regular expression and a division, a
//! comment and code, part of a string and code are told apart; the search mutates allowed
//! programs with those spellings (`MUX_SEARCH_ITERATIONS`, `MUX_SEARCH_SEED`). `MUX_AWK`
//! names another awk to run (gawk, busybox awk); the default is the installed `awk`.

use mux_permission::{Permissions, Verdict};

use super::real_programs::{
    self, Rng, all_allowed, insert_after, iterations, none_disagree, permissions, quote, verdict,
};

const INPUT: &str = "a/b c\n1 2 3\n";

/// The awk to run: `MUX_AWK`, else `awk`.
fn awk() -> String {
    std::env::var("MUX_AWK").unwrap_or_else(|_| "awk".to_owned())
}

/// Programs the red team and the awk grammar suggest, harmless and not.
const CORPUS: &[&str] = &[
    // A regular expression after `print`, holding `#`: the rest of the line is code.
    "{print /#/; system(\"touch CANARY\")}",
    "{print /#/; print > \"out\"}",
    "{print /#/ > \"out\"}",
    // At the start of a line.
    "{ x = 1\n/#/; system(\"touch CANARY\") }",
    "/#/ { system(\"touch CANARY\") }",
    "NR==1\n/#/ { system(\"touch CANARY\") }",
    // After `(`, `,`, `!`, `~`, `&&`, `$`.
    "{ print (/#/); system(\"touch CANARY\") }",
    "{ print 1, /#/; system(\"touch CANARY\") }",
    "{ print !/#/; system(\"touch CANARY\") }",
    "{ print $0 ~ /#/; system(\"touch CANARY\") }",
    "{ print 1 && /#/; system(\"touch CANARY\") }",
    "{ print $/#/; system(\"touch CANARY\") }",
    // After the header of `if` and `while` (gawk reads a regex; mawk refuses the program).
    "{ if (1) /#/; system(\"touch CANARY\") }",
    // `(` or `}` inside a regular expression, so `>` reads as a comparison to a counter.
    "{ print /(/ > \"out\" }",
    "{ print /}/ > \"out\" }",
    "{ if (/(/) print > \"out\" }",
    "{ x = /}/ } { print > \"out\" }",
    // `#`, `(`, `}` and quotes inside strings.
    "{ print \"#\"; system(\"touch CANARY\") }",
    "{ print \"(\" > \"out\" }",
    "{ print \"\\\"#\" ; print | \"touch CANARY\" }",
    // Bracket expressions holding `/`, and `\\/`.
    "{ print /[/]#/; system(\"touch CANARY\") }",
    "{ print /a\\/#/; system(\"touch CANARY\") }",
    "$0 ~ /[/]/ { print }",
    // Division after `)`, `]`, a name, a number, a string.
    // (After `)`: in STAYS_ALLOWED.)
    "{ a[1] = 4; x = a[1] /2/ 1; print x }",
    "{ n = 4; x = n /2/ 1; print x }",
    "{ x = 4 /2/ 1; print x }",
    "{ x = 1 /#/ }\n{ system(\"touch CANARY\") }",
    // Line continuations and comments.
    "{ print \\\n/#/; system(\"touch CANARY\") }",
    "{ print 1 # \\\n; system(\"touch CANARY\") }",
    "# c\n{ print \"ok\" } # system(\"touch CANARY\")",
    // Output redirection behind parentheses.
    "{ for (print > \"out\"; 0;) ; }",
    "{ printf(\"%s\\n\", $0) > \"out\" }",
    // Plain programs that must stay allowed: STAYS_ALLOWED.
];

/// Programs of the corpus that must be allowed: the checker does not refuse everything.
const STAYS_ALLOWED: &[&str] = &[
    "{ print $1 }",
    "{ print /#/ }",
    "/a(/ { print }",
    "{ if ($1 ~ /[0-9]}/) print }",
    "{ x = $1 / 2; print x }",
    "BEGIN { FS = \"/\" } { print $2 }",
    "{ print (1 > 2) }",
    "{ x = (4) /2/ 1; print x }",
];

/// What one program did against what the checker said; `None` when they agree.
fn disagreement(permissions: &Permissions, program: &str) -> Option<String> {
    let command = format!("awk {}", quote(program));
    let verdict = verdict(permissions, &command);
    let outcome = real_programs::run(&awk(), &[program], INPUT, &[]);
    let unsafe_allow = verdict == Verdict::Allow && (outcome.ran_command || outcome.wrote);
    let unseen_command = outcome.ran_command && verdict != Verdict::Deny;
    (unsafe_allow || unseen_command).then(|| {
        let class = if unsafe_allow {
            "UNSAFE ALLOW"
        } else {
            "DENY MISSED"
        };
        format!(
            "{class} {program:?}: {verdict:?}, but awk ran a command: {}, wrote a file: {} ({})",
            outcome.ran_command,
            outcome.wrote,
            outcome.output.trim()
        )
    })
}

#[test]
fn tricky_programs_are_allowed_only_when_awk_does_nothing_else() {
    if !real_programs::require(&awk()) {
        return;
    }
    let permissions = permissions(&["Bash(awk:*)"]);
    // The whole corpus: the plain programs that must stay allowed are part of it.
    let corpus = [CORPUS, STAYS_ALLOWED].concat();
    let failures: Vec<String> = corpus
        .iter()
        .filter_map(|p| disagreement(&permissions, p))
        .collect();
    none_disagree("awk corpus", &failures, corpus.len(), "programs");
    all_allowed(&permissions, STAYS_ALLOWED, |program| {
        format!("awk {}", quote(program))
    });
    // The corpus reaches real behaviour: awk runs the canary command for some of it.
    let ran = corpus
        .iter()
        .filter(|p| real_programs::run(&awk(), &[p], INPUT, &[]).ran_command)
        .count();
    assert!(ran >= 10, "only {ran} corpus programs ran the canary");
}

/// Allowed programs the search starts from.
const SEEDS: &[&str] = &[
    "{print $1}",
    "NR>1",
    "$3 > 100 {print $2}",
    "{ if ($3 > 100) print $2 }",
    "/a|b/ {n++} END {print n}",
    "{ x = a / b / c; print x }",
    "BEGIN { FS = \",\" } { s += $2 } END { printf \"%d\\n\", s }",
    "length($0) >= 80",
    "{ print (a > b) }",
    "$1 == \"x|y\" || $2 ~ /z/",
];

/// Spellings that make a checker and awk disagree on what is code.
const DISGUISES: &[&str] = &[
    "print /#/;",
    "/#/",
    " /#/ ",
    "print /(/;",
    "print /}/;",
    "x = /}/;",
    "$/#/;",
    "if (1) /#/;",
    "x = 1 /#/;",
    "print /[/]#/;",
    "print /a\\/#/;",
    "\"#\"",
    "\"}\"",
    "# c\n",
    "\\\n",
    "\t",
    "\n",
    "(",
    ")",
    "{",
    "}",
    ";",
    "/",
    "x++ /#/;",
    "print length /#/;",
    "print\\\n/#/;",
];

/// What the disguises may hide.
const PAYLOADS: &[&str] = &[
    "system(\"touch CANARY\")",
    "print > \"out\"",
    "print | \"touch CANARY\"",
    "\"touch CANARY\" | getline",
    "printf \"x\" > \"out\"",
    "print /(/ > \"out\"",
];

/// Where a mutation puts awk pieces (see [`real_programs::mutate`]).
fn splice(rng: &mut Rng, program: &str, disguise: &str, payload: &str, kind: usize) -> String {
    match kind {
        2 => insert_after(rng, program, &['{', ';'], &format!("{disguise} {payload};")),
        3 => format!("{program}\n{disguise}\n{{ {payload} }}"),
        _ => insert_after(
            rng,
            program,
            &[' ', '{', '(', ','],
            &format!(" {disguise} "),
        ),
    }
}

#[test]
fn mutated_programs_are_allowed_only_when_awk_does_nothing_else() {
    if !real_programs::require(&awk()) {
        return;
    }
    let permissions = permissions(&["Bash(awk:*)"]);
    let mut rng = Rng::seeded(40_002);
    let mut failures = Vec::new();
    let runs = iterations(400);
    for _ in 0..runs {
        let program = real_programs::mutate(&mut rng, SEEDS, DISGUISES, PAYLOADS, splice);
        if let Some(failure) = disagreement(&permissions, &program) {
            failures.push(failure);
        }
    }
    none_disagree("awk search", &failures, runs, "mutants");
}
