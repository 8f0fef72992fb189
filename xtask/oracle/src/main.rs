//! The differential oracle of mux-permission's shell analysis (`cargo xtask oracle`).
//!
//! Generates shell commands from the shell grammar, per-program models and runner
//! compositions; asks mux-permission, under a fixed policy of read-ish allow rules, which it
//! allows; runs every allowed command in a disposable sandbox under strace; and reports every
//! exec, file change or canary the analysis did not predict. Exits non-zero on any
//! disagreement.
//!
//! Beside the sampled corpus, a search ([`search`]) mutates allowed commands toward the
//! spellings where two parsers disagree and keeps what reaches new behaviour.
//!
//! ```text
//! xtask-oracle                 the full corpus (40,000 commands), every allowed one run
//! xtask-oracle --full          the full corpus, and a search of 1,000,000 executions
//! xtask-oracle --slice         a 4,000-command corpus, at most 300 allowed ones run, and a
//!                              search of 40,000 executions, at most 400 runs (for ci)
//! xtask-oracle --search        the search alone (1,000,000 executions)
//! options: --seed N  --corpus N  --execute N  --jobs N  --timeout-secs N  --report PATH
//!          --executions N  --runs N  --batch N   (the search's budget)
//! xtask-oracle --probe CMD...  the verdict, prediction and findings for given commands
//! xtask-oracle --list          the commands the slice or corpus would run, without running them
//! ```

mod classes;
mod compare;
mod fixture;
mod generate;
mod mutate;
mod policy;
mod report;
mod rng;
mod sandbox;
mod search;
mod seeds;
mod signature;
mod trace;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mux_permission::Verdict;

use crate::compare::Finding;
use crate::generate::{Family, Generated};
use crate::report::{Outcome, Report};
use crate::sandbox::Sandbox;
use crate::search::Budget;

/// The search's budget in `--full` and `--search`.
const FULL_SEARCH: Budget = Budget {
    executions: 1_000_000,
    batch: 10_000,
    runs: 10_000,
    generated_seeds: 300,
};

/// The search's budget in `--slice`.
const SLICE_SEARCH: Budget = Budget {
    executions: 40_000,
    batch: 10_000,
    runs: 400,
    generated_seeds: 100,
};

/// The options of one oracle run.
#[derive(Debug)]
struct Options {
    seed: u64,
    corpus: usize,
    execute: Option<usize>,
    jobs: usize,
    timeout: Duration,
    report: PathBuf,
    probe: Vec<String>,
    slice: bool,
    list: bool,
    /// Run the sampled corpus.
    sample: bool,
    /// Run the search, with this budget.
    search: Option<Budget>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self, String> {
        let slice = args.iter().any(|a| a == "--slice");
        let full = args.iter().any(|a| a == "--full");
        let search_only = args.iter().any(|a| a == "--search");
        if [slice, full, search_only].iter().filter(|x| **x).count() > 1 {
            return Err("--slice, --full and --search exclude each other".to_owned());
        }
        let mut options = Options {
            seed: 23,
            corpus: if slice { 4_000 } else { 40_000 },
            execute: slice.then_some(300),
            jobs: 2,
            timeout: Duration::from_secs(5),
            report: PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../target")
                .join(if slice {
                    "oracle-slice-report.txt"
                } else {
                    "oracle-report.txt"
                }),
            probe: Vec::new(),
            slice,
            list: false,
            sample: !search_only,
            search: if slice {
                Some(SLICE_SEARCH)
            } else if full || search_only {
                Some(FULL_SEARCH)
            } else {
                None
            },
        };
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            let mut value = |name: &str| {
                iter.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            let number = |name: &str, text: String| {
                text.parse::<u64>()
                    .map_err(|_| format!("{name} takes a number, not {text:?}"))
            };
            match arg.as_str() {
                "--slice" | "--full" | "--search" => {}
                "--executions" | "--runs" | "--batch" => {
                    let n = number(arg, value(arg)?)? as usize;
                    let budget = options
                        .search
                        .as_mut()
                        .ok_or_else(|| format!("{arg} needs --full, --search or --slice"))?;
                    match arg.as_str() {
                        "--executions" => budget.executions = n,
                        "--runs" => budget.runs = n,
                        _ => budget.batch = n.max(1),
                    }
                }
                "--list" => options.list = true,
                "--seed" => options.seed = number(arg, value(arg)?)?,
                "--corpus" => options.corpus = number(arg, value(arg)?)? as usize,
                "--execute" => options.execute = Some(number(arg, value(arg)?)? as usize),
                "--jobs" => options.jobs = (number(arg, value(arg)?)? as usize).max(1),
                "--timeout-secs" => {
                    options.timeout = Duration::from_secs(number(arg, value(arg)?)?.max(1));
                }
                "--report" => options.report = PathBuf::from(value(arg)?),
                "--probe" => {
                    options.probe.extend(iter.by_ref().cloned());
                }
                other => return Err(format!("unknown option {other:?}")),
            }
        }
        Ok(options)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = Options::parse(&args).and_then(|options| {
        if options.probe.is_empty() {
            run(&options)
        } else {
            probe(&options)
        }
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("oracle: {message}");
            ExitCode::from(2)
        }
    }
}

/// The git exec path (where git's helpers live), asked of the host's git.
fn git_exec_path() -> String {
    std::process::Command::new("git")
        .arg("--exec-path")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// Runs one command and returns its findings.
fn execute(
    sandbox: &Sandbox,
    command: &str,
    slot: usize,
    git_exec_path: &str,
) -> Result<(Vec<Finding>, bool), String> {
    let programs: BTreeSet<String> = policy::predicted_programs(command);
    let observed = sandbox.run(command, slot)?;
    Ok((
        compare::findings(&programs, &observed, git_exec_path),
        observed.timed_out,
    ))
}

fn probe(options: &Options) -> Result<bool, String> {
    sandbox::check_tools()?;
    let permissions = policy::permissions()?;
    let sandbox = Sandbox::new(options.timeout)?;
    let exec_path = git_exec_path();
    let mut clean = true;
    for command in &options.probe {
        let verdict = policy::verdict(&permissions, command)?;
        let programs = policy::predicted_programs(command);
        println!("{command}\n  verdict {verdict:?}, predicted programs {programs:?}");
        let (found, timed_out) = execute(&sandbox, command, 0, &exec_path)?;
        if timed_out {
            println!("  timed out");
        }
        for finding in &found {
            println!("  {finding}");
        }
        clean &= found.is_empty() || verdict != Verdict::Allow;
    }
    Ok(clean)
}

fn run(options: &Options) -> Result<bool, String> {
    if !options.list {
        sandbox::check_tools()?;
    }
    let started = Instant::now();
    let permissions = policy::permissions()?;
    let mut summary = String::new();
    let mut full = String::new();
    let mut clean = true;
    // Built on first use: `--list` runs nothing.
    let mut sandbox: Option<Sandbox> = None;
    let exec_path = git_exec_path();
    if options.sample {
        let corpus = generate::corpus(options.seed, options.corpus);
        let mut report = Report::new(options.seed, corpus.len());
        let mut allowed: Vec<&Generated> = Vec::new();
        for generated in &corpus {
            let verdict = policy::verdict(&permissions, &generated.text)?;
            report.decided(generated.family, verdict);
            if verdict == Verdict::Allow {
                allowed.push(generated);
            }
        }
        let selected = select(&allowed, options.execute);
        if options.list {
            for generated in &selected {
                println!("{:?}\t{}", generated.family, generated.text.escape_debug());
            }
            return Ok(true);
        }
        eprintln!(
            "oracle: {} commands generated and decided in {:.1?}; running {} of the {} allowed",
            corpus.len(),
            started.elapsed(),
            selected.len(),
            allowed.len()
        );
        let sandbox = match &mut sandbox {
            Some(s) => &*s,
            None => sandbox.insert(Sandbox::new(options.timeout)?),
        };
        let (outcomes, errors) = run_selected(sandbox, &selected, options.jobs, &exec_path);
        for outcome in outcomes {
            report.executed(outcome);
        }
        let text = report.render(options.slice, started.elapsed(), &errors);
        summary.push_str(&text.summary);
        full.push_str(&text.full);
        clean &= report.disagreements() == 0 && errors.is_empty();
    }
    if options.list {
        return Ok(true);
    }
    if let Some(budget) = &options.search {
        let sandbox = match &mut sandbox {
            Some(s) => &*s,
            None => sandbox.insert(Sandbox::new(options.timeout)?),
        };
        let begun = Instant::now();
        eprintln!(
            "oracle search: {} executions in batches of {}, at most {} runs, {} jobs",
            budget.executions, budget.batch, budget.runs, options.jobs
        );
        let searched = search::search(
            &permissions,
            sandbox,
            &exec_path,
            options.seed,
            budget,
            options.jobs,
        )?;
        let line = search::summary_line(&searched, options.seed, begun.elapsed());
        let (class_summary, class_full) = classes::render(&searched.found);
        summary.push_str(&line);
        summary.push_str(&class_summary);
        full.push_str(&line);
        full.push_str(&class_summary);
        full.push_str(&class_full);
        if !searched.errors.is_empty() {
            let _ = writeln!(
                summary,
                "\n{} search runs failed to start or be read:",
                searched.errors.len()
            );
            for error in searched.errors.iter().take(5) {
                let _ = writeln!(summary, "  {error}");
            }
            for error in &searched.errors {
                let _ = writeln!(full, "search run error: {error}");
            }
        }
        clean &= searched.found.is_empty() && searched.errors.is_empty();
    }
    print!("{summary}");
    if let Some(parent) = options.report.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    std::fs::write(&options.report, &full)
        .map_err(|e| format!("writing {}: {e}", options.report.display()))?;
    println!(
        "oracle: every disagreement is listed in {}",
        options.report.display()
    );
    Ok(clean)
}

/// Runs the selected sampled commands, `jobs` at a time; their outcomes in corpus order, and
/// the runs that failed.
fn run_selected(
    sandbox: &Sandbox,
    selected: &[&Generated],
    jobs: usize,
    exec_path: &str,
) -> (Vec<Outcome>, Vec<String>) {
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for slot in 0..jobs {
            let (next, outcomes, errors) = (&next, &outcomes, &errors);
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(generated) = selected.get(index) else {
                        break;
                    };
                    if index > 0 && index % 500 == 0 {
                        eprintln!("oracle: {index}/{} run", selected.len());
                    }
                    match execute(sandbox, &generated.text, slot, exec_path) {
                        Ok((findings, timed_out)) => {
                            let outcome = Outcome {
                                family: generated.family,
                                command: generated.text.clone(),
                                findings,
                                timed_out,
                            };
                            if let Ok(mut all) = outcomes.lock() {
                                all.push((index, outcome));
                            }
                        }
                        Err(message) => {
                            if let Ok(mut all) = errors.lock() {
                                all.push(format!("{:?}: {message}", generated.text));
                            }
                        }
                    }
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap_or_default();
    outcomes.sort_by_key(|(index, _)| *index);
    let errors = errors.into_inner().unwrap_or_default();
    (outcomes.into_iter().map(|(_, o)| o).collect(), errors)
}

/// The allowed commands to run: all of them, or at most `limit` taken round-robin across the
/// families (in corpus order within each), so a slice covers every family.
fn select<'a>(allowed: &[&'a Generated], limit: Option<usize>) -> Vec<&'a Generated> {
    let Some(limit) = limit else {
        return allowed.to_vec();
    };
    let mut queues: Vec<Vec<&Generated>> = Family::ALL
        .iter()
        .map(|family| {
            allowed
                .iter()
                .filter(|g| g.family == *family)
                .rev()
                .copied()
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    while out.len() < limit && queues.iter().any(|q| !q.is_empty()) {
        for queue in &mut queues {
            if out.len() < limit
                && let Some(next) = queue.pop()
            {
                out.push(next);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_takes_every_family_in_turn() {
        let corpus = generate::corpus(3, 600);
        let all: Vec<&Generated> = corpus.iter().collect();
        let picked = select(&all, Some(18));
        assert_eq!(picked.len(), 18);
        for family in Family::ALL {
            assert_eq!(picked.iter().filter(|g| g.family == family).count(), 2);
        }
        assert_eq!(select(&all, None).len(), 600);
    }

    #[test]
    fn options_parse_and_bad_ones_are_named() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let slice = Options::parse(&args(&["--slice", "--seed", "5"])).unwrap();
        assert_eq!(
            (slice.seed, slice.corpus, slice.execute),
            (5, 4_000, Some(300))
        );
        assert_eq!(
            slice.search.as_ref().map(|b| b.executions),
            Some(SLICE_SEARCH.executions)
        );
        let plain = Options::parse(&args(&[])).unwrap();
        assert_eq!((plain.corpus, plain.execute), (40_000, None));
        assert!(plain.search.is_none() && plain.sample);
        let full = Options::parse(&args(&["--full"])).unwrap();
        assert!(full.sample);
        assert!(full.search.as_ref().unwrap().executions >= 1_000_000);
        let search =
            Options::parse(&args(&["--search", "--executions", "500", "--runs", "7"])).unwrap();
        assert!(!search.sample);
        let budget = search.search.unwrap();
        assert_eq!((budget.executions, budget.runs), (500, 7));
        assert!(
            Options::parse(&args(&["--runs", "7"]))
                .unwrap_err()
                .contains("--runs")
        );
        assert!(Options::parse(&args(&["--full", "--slice"])).is_err());
        let err = Options::parse(&args(&["--jobs", "x"])).unwrap_err();
        assert!(err.contains("--jobs"), "{err}");
        assert!(
            Options::parse(&args(&["--bogus"]))
                .unwrap_err()
                .contains("--bogus")
        );
    }
}
