//! Shared by the sub-language differential tests: the verdict for a command line, a run of
//! the real program in a throwaway directory with a canary, and a small seeded generator.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mux_permission::{
    Mode, PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict, builtin,
};
use mux_tool::Subject;

/// The file a command run by the program creates (`touch CANARY`).
pub(crate) const CANARY: &str = "CANARY";

/// Permissions that allow `allow` and deny `touch`, `rm` and `curl`.
pub(crate) fn permissions(allow: &[&str]) -> Permissions {
    project(rules(
        allow,
        &["Bash(touch:*)", "Bash(rm:*)", "Bash(curl:*)"],
    ))
}

/// Permissions in `mode` that allow `allow` and deny `deny`.
pub(crate) fn policy(mode: Mode, allow: &[&str], deny: &[&str]) -> Permissions {
    project(rules(allow, deny).with_mode(mode))
}

fn rules(allow: &[&str], deny: &[&str]) -> RuleSet {
    let mut rules = RuleSet::new();
    for rule in allow {
        rules = rules.with_allow(rule).unwrap();
    }
    for rule in deny {
        rules = rules.with_deny(rule).unwrap();
    }
    rules
}

fn project(rules: RuleSet) -> Permissions {
    Permissions::builder(PathContext::new("/nonexistent/project"))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build()
}

/// The verdict for a `Bash` command line.
pub(crate) fn verdict(permissions: &Permissions, command: &str) -> Verdict {
    let bash = builtin::spec("Bash").unwrap();
    permissions.check(&bash, &Subject::command(command)).verdict
}

/// `text` as one single-quoted shell word.
pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// What a real run did.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// A command the program ran created [`CANARY`].
    pub(crate) ran_command: bool,
    /// Some other file appeared in the directory.
    pub(crate) wrote: bool,
    /// Standard output and standard error, together.
    pub(crate) output: String,
}

/// Whether `program` can be run here. The differential tests need the real programs: they
/// fail when one is missing, unless `MUX_SKIP_REAL_PROGRAMS` is set.
pub(crate) fn require(program: &str) -> bool {
    let found = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found && std::env::var_os("MUX_SKIP_REAL_PROGRAMS").is_none() {
        panic!("`{program}` is needed by this test (set MUX_SKIP_REAL_PROGRAMS=1 to skip)");
    }
    found
}

/// Runs `program args` in a new empty directory, feeding `stdin`, with only `PATH` and
/// `env` in its environment; stops it after two seconds (a generated program may loop).
pub(crate) fn run(program: &str, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    if let Some(mut input) = child.stdin.take() {
        // A program that exits before reading closes the pipe; that is not a failure here.
        let _ = input.write_all(stdin.as_bytes());
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let done = child.wait_with_output().unwrap();
    let mut output = String::from_utf8_lossy(&done.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&done.stderr));
    let (ran_command, wrote) = look(dir.path());
    Outcome {
        ran_command,
        wrote,
        output,
    }
}

fn look(dir: &Path) -> (bool, bool) {
    let mut ran = false;
    let mut wrote = false;
    for entry in std::fs::read_dir(dir).unwrap() {
        if entry.unwrap().file_name() == CANARY {
            ran = true;
        } else {
            wrote = true;
        }
    }
    (ran, wrote)
}

/// How many generated programs a search tries: `MUX_SEARCH_ITERATIONS`, else `default`.
pub(crate) fn iterations(default: usize) -> usize {
    std::env::var("MUX_SEARCH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small seeded generator (xorshift64*), so a failing search can be replayed.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded from `MUX_SEARCH_SEED`, else `default`.
    pub(crate) fn seeded(default: u64) -> Self {
        let seed = std::env::var("MUX_SEARCH_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default);
        Self(seed | 1)
    }

    /// A number below `n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }

    /// One of `items`.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Where a language puts a disguise and a payload in a program, for mutation kinds 2, 3 and
/// 4 (`kind`); kinds 0 and 1 insert one of them anywhere.
pub(crate) type Splice =
    fn(rng: &mut Rng, program: &str, disguise: &str, payload: &str, kind: usize) -> String;

/// One mutant: a program of `seeds` with one to three disguises and payloads put in it, each
/// anywhere or where `splice` says.
pub(crate) fn mutate(
    rng: &mut Rng,
    seeds: &[&str],
    disguises: &[&str],
    payloads: &[&str],
    splice: Splice,
) -> String {
    let mut program = (*rng.pick(seeds)).to_owned();
    for _ in 0..1 + rng.below(3) {
        let disguise = *rng.pick(disguises);
        let payload = *rng.pick(payloads);
        program = match rng.below(5) {
            0 => insert_anywhere(rng, &program, disguise),
            1 => insert_anywhere(rng, &program, payload),
            kind => splice(rng, &program, disguise, payload, kind),
        };
    }
    program
}

/// Inserts `piece` into `text` at a random character boundary.
pub(crate) fn insert_anywhere(rng: &mut Rng, text: &str, piece: &str) -> String {
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let at = *rng.pick(&bounds);
    format!("{}{piece}{}", &text[..at], &text[at..])
}

/// Inserts `piece` just after one of the characters `after` in `text` (at the end when there
/// is none).
pub(crate) fn insert_after(rng: &mut Rng, text: &str, after: &[char], piece: &str) -> String {
    let spots: Vec<usize> = text
        .char_indices()
        .filter(|(_, c)| after.contains(c))
        .map(|(i, c)| i + c.len_utf8())
        .collect();
    let at = if spots.is_empty() {
        text.len()
    } else {
        *rng.pick(&spots)
    };
    format!("{}{piece}{}", &text[..at], &text[at..])
}

/// Fails with every disagreement in `failures`, after printing how many of `total` `things`
/// (`programs`, `mutants`, …) disagree under `label`.
pub(crate) fn none_disagree(label: &str, failures: &[String], total: usize, things: &str) {
    eprintln!("{label}: {} of {total} {things} disagree", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Each of `programs`, as the command line `command(program)`, is allowed by `permissions`:
/// the checker does not refuse everything.
pub(crate) fn all_allowed(
    permissions: &Permissions,
    programs: &[&str],
    command: impl Fn(&str) -> String,
) {
    for program in programs {
        let verdict = verdict(permissions, &command(program));
        assert_eq!(verdict, Verdict::Allow, "{program:?}");
    }
}
