//! Issue 40, class 4: the jq checker reads a program the way jq reads it. Every program is
//! judged as `jq -n PROGRAM` under `Bash(jq:*)` and run by the real `jq -n` with a canary
//! in its environment: a program that is allowed must not print the canary. The corpus holds
//! the spellings of environment access (`$ ENV`, `$` and `ENV` split by a tab, a newline or a
//! comment, interpolations); the search mutates allowed programs with them
//! (`MUX_SEARCH_ITERATIONS`, `MUX_SEARCH_SEED`).

use mux_permission::{Permissions, Verdict};

use super::real_programs::{self, Rng, insert_after, iterations, permissions, quote, verdict};

const SECRET: &str = "zq7-canary-secret";

/// Spellings of environment access, and harmless look-alikes.
const CORPUS: &[&str] = &[
    "$ENV.MUX_CANARY",
    "$ ENV.MUX_CANARY",
    "$\tENV.MUX_CANARY",
    "$\nENV.MUX_CANARY",
    "$ # comment\nENV.MUX_CANARY",
    "$#\n#\nENV | .MUX_CANARY",
    "env.MUX_CANARY",
    "\"\\(env.MUX_CANARY)\"",
    "\"\\(\"\\($ ENV.MUX_CANARY)\")\"",
    "{$ENV} | .ENV.MUX_CANARY",
    "{$ ENV} | .ENV.MUX_CANARY",
    "# c \\\nenv.MUX_CANARY",
    "\"#\" | $ ENV.MUX_CANARY",
    "\"\\\"#\" | $\tENV.MUX_CANARY",
    "[1] | .[] as $ENV | $ ENV",
    // Harmless, and allowed.
    ".env",
    "\"env $ENV\"",
    "# env $ENV\n.",
    "$__loc__",
    ". as $env | $env",
    "{a: 1} | .a",
];

/// Programs of the corpus that must be allowed.
const STAYS_ALLOWED: &[&str] = &[
    ".env",
    "\"env $ENV\"",
    "# env $ENV\n.",
    "$__loc__",
    ". as $env | $env",
    "{a: 1} | .a",
];

/// Whether the real `jq -n PROGRAM` prints the canary.
fn leaks(program: &str) -> bool {
    real_programs::run("jq", &["-n", program], "", &[("MUX_CANARY", SECRET)])
        .output
        .contains(SECRET)
}

/// Whether the checker allows `jq -n PROGRAM`.
fn allowed(permissions: &Permissions, program: &str) -> bool {
    verdict(permissions, &format!("jq -n {}", quote(program))) == Verdict::Allow
}

#[test]
fn environment_access_is_never_allowed_however_spelled() {
    if !real_programs::require("jq") {
        return;
    }
    let permissions = permissions(&["Bash(jq:*)"]);
    let leaking: Vec<bool> = CORPUS.iter().map(|p| leaks(p)).collect();
    let failures: Vec<String> = CORPUS
        .iter()
        .zip(&leaking)
        .filter(|(p, leaks)| **leaks && allowed(&permissions, p))
        .map(|(p, _)| format!("UNSAFE ALLOW {p:?}: allowed, but jq prints the environment"))
        .collect();
    eprintln!(
        "jq corpus: {} of {} programs disagree",
        failures.len(),
        CORPUS.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for program in STAYS_ALLOWED {
        let command = format!("jq -n {}", quote(program));
        assert_eq!(verdict(&permissions, &command), Verdict::Allow, "{program}");
    }
    // The corpus reaches real behaviour: jq prints the canary for some of it.
    let leaked = leaking.iter().filter(|l| **l).count();
    assert!(
        leaked >= 10,
        "only {leaked} corpus programs print the canary"
    );
}

/// Allowed programs the search starts from.
const SEEDS: &[&str] = &[
    ".",
    ".a.b",
    "map(select(.x > 1)) | length",
    "[.[] | {n: .name}]",
    "{a: 1, b: [1, 2]} | .b[0]",
    "\"x\\(1 + 2)y\"",
];

/// Spellings where a checker and jq may disagree on what is code.
const DISGUISES: &[&str] = &[
    "# c\n",
    "# c \\\n",
    "#",
    "\"#\"",
    "\"\\\"#\"",
    "\t",
    "\n",
    " ",
    "|",
    ",",
    "(",
    ")",
    "$",
    "\"\\(",
    ")\"",
    "$__loc__",
    ".env",
];

/// What the disguises may hide.
const PAYLOADS: &[&str] = &[
    "$ENV.MUX_CANARY",
    "$ ENV.MUX_CANARY",
    "$\tENV.MUX_CANARY",
    "$ # c\nENV.MUX_CANARY",
    "env.MUX_CANARY",
    "\"\\(env.MUX_CANARY)\"",
    "ENV.MUX_CANARY",
    "{$ ENV}",
];

/// Where a mutation puts jq pieces (see [`real_programs::mutate`]).
fn splice(rng: &mut Rng, program: &str, disguise: &str, payload: &str, kind: usize) -> String {
    match kind {
        2 => format!("{program} {disguise} | {payload}"),
        3 => format!("({disguise}{payload}), {program}"),
        _ => insert_after(rng, program, &['|', '(', ',', ' ', '$'], disguise),
    }
}

#[test]
fn mutated_programs_are_allowed_only_when_jq_reads_no_environment() {
    if !real_programs::require("jq") {
        return;
    }
    let permissions = permissions(&["Bash(jq:*)"]);
    let mut rng = Rng::seeded(40_004);
    let runs = iterations(300);
    let mut failures = Vec::new();
    let mut leaked = 0;
    let mut tried = 0;
    for round in 0..runs {
        let program = real_programs::mutate(&mut rng, SEEDS, DISGUISES, PAYLOADS, splice);
        let allowed = allowed(&permissions, &program);
        // Every allowed mutant runs; one refused mutant in ten runs too, to show the search
        // reaches the environment.
        if !allowed && round % 10 != 0 {
            continue;
        }
        tried += 1;
        let leaks = leaks(&program);
        leaked += usize::from(leaks && !allowed);
        if allowed && leaks {
            failures.push(format!(
                "UNSAFE ALLOW {program:?}: allowed, but jq prints the environment"
            ));
        }
    }
    eprintln!(
        "jq search: {} of {runs} mutants disagree ({tried} run, {leaked} refused ones print the canary)",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(runs == 0 || leaked > 0, "no mutant reached the environment");
}
