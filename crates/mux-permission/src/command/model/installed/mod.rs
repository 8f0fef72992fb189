//! The option tables checked against the installed programs (issue 40, class 3): every
//! option a model lists must take its value the way the program on this machine takes it, or
//! the model swallows a word the program reads as an option of its own (`git log --format
//! --output=F` wrote F while the model read `--output=F` as the format).
//!
//! The truth comes from the programs: how git treats a canary word after the option (the same
//! probe answers for parse-options and for the options git parses by hand), and git's
//! completion lists for the names an abbreviation could collide with; GNU tools' `--help` and
//! how getopt treats a canary after the option. Every disagreement fails the test, named by
//! program, option, and both arities. Programs that are not installed are skipped with a
//! note, except the core ones (git, diff, grep, sed, find), which must be there.

mod git;
mod gnu;

use std::fmt;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::opt::Effect;

/// How an option takes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Arity {
    /// No value.
    Flag,
    /// A value, attached (`--opt=v`, `-ov`) or the next word.
    Required,
    /// A value only attached; the bare option is refused.
    RequiredAttached,
    /// An optional value, attached only.
    Optional,
    /// The next word, unless the option is the last word.
    RequiredUnlessLast,
    /// The program does not know the option.
    Unknown,
}

impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Flag => "no value",
            Self::Required => "a value, attached or the next word",
            Self::RequiredAttached => "a value, attached only",
            Self::Optional => "an optional value, attached only",
            Self::RequiredUnlessLast => "the next word unless last",
            Self::Unknown => "unknown to the program",
        })
    }
}

/// The arity a model gives an option through its effect.
pub(super) fn arity(effect: Effect) -> Arity {
    if effect == Effect::ValueUnlessLast {
        Arity::RequiredUnlessLast
    } else if effect == Effect::AttachedValue {
        Arity::RequiredAttached
    } else if effect.needs_value() {
        Arity::Required
    } else if effect.optional_value() {
        Arity::Optional
    } else {
        Arity::Flag
    }
}

/// One model entry that disagrees with the installed program.
#[derive(Clone, Debug)]
pub(super) struct Disagreement {
    /// The program (`git log`, `diff`).
    pub(super) program: String,
    /// The option as spelled (`--format`, `-U`).
    pub(super) option: String,
    /// What the model says.
    pub(super) model: String,
    /// What the program does.
    pub(super) real: String,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: the model says {}, the program takes {}",
            self.program, self.option, self.model, self.real
        )
    }
}

/// What one run of a program did.
#[derive(Debug)]
pub(super) struct Outcome {
    pub(super) stdout: String,
    pub(super) stderr: String,
}

/// Runs `program args` in `dir` with `env` and no standard input, killed after a few
/// seconds (a probe that waits is read as whatever it printed by then).
pub(super) fn run(program: &str, args: &[String], dir: &Path, env: &[(&str, String)]) -> Outcome {
    let child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return Outcome {
            stdout: String::new(),
            stderr: format!("cannot start {program}"),
        };
    };
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out = std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(pipe) = stdout.as_mut() {
            let _ = pipe.take(1 << 20).read_to_end(&mut text);
        }
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(pipe) = stderr.as_mut() {
            let _ = pipe.take(1 << 20).read_to_end(&mut text);
        }
        text
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => break,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    let text = |handle: std::thread::JoinHandle<Vec<u8>>| {
        String::from_utf8_lossy(&handle.join().unwrap_or_default()).into_owned()
    };
    Outcome {
        stdout: text(out),
        stderr: text(err),
    }
}

/// `f` over `items` on a few threads, each with its own state from `init` (a scratch
/// repository), results in order.
pub(super) fn parallel<T: Sync, S, R: Send>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    // Most of a probe is spent starting the program: more workers than cores.
    let workers = std::thread::available_parallelism().map_or(6, |n| n.get().clamp(6, 8));
    let mut results: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut state = init();
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, f(&mut state, item)));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// Whether `program` can be started.
pub(super) fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Fails with every disagreement, grouped by program, and the counts.
pub(super) fn verdict(what: &str, disagreements: &[Disagreement], checked: usize) {
    let mut by_program: std::collections::BTreeMap<&str, usize> = Default::default();
    for d in disagreements {
        *by_program.entry(d.program.as_str()).or_default() += 1;
    }
    println!(
        "{what}: {checked} option spellings checked, {} disagree {by_program:?}",
        disagreements.len()
    );
    assert!(checked > 0, "{what}: nothing was checked");
    let list: Vec<String> = disagreements.iter().map(ToString::to_string).collect();
    assert!(
        list.is_empty(),
        "{what}: {} model entries disagree with the installed programs {by_program:?}:\n{}",
        list.len(),
        list.join("\n")
    );
}
