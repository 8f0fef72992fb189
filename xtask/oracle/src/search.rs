//! The searching oracle: mutate commands the analysis allows toward the spellings where two
//! parsers disagree, keep what reaches new behaviour, and run the allowed candidates.
//!
//! It works in batches, so a seed gives the same search whatever the number of jobs:
//! 1. draw `batch` new candidates from the corpus (a parent, then one to four operators of
//!    [`crate::mutate`]); every candidate's analysis is one execution;
//! 2. read every candidate as the analysis does (in parallel); a candidate whose signature
//!    (verdict, hazards, predicted commands' shape, see [`crate::signature`]) is new for its
//!    seed program joins the corpus, allowed or not (an asked payload is one hiding step away
//!    from an allowed one), and so does an allowed candidate with a new set of operators for its
//!    program (a spelling the analysis still vouches for is where the next payload goes);
//! 3. of the allowed candidates, run under strace those with a new (program, skeleton,
//!    signature), the ones carrying a payload first, within the run budget of the batch;
//! 4. a run whose outcome class is new joins the corpus; a run that did what the analysis did
//!    not predict is a disagreement, labelled with its class.

use std::collections::{BTreeSet, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mux_permission::{Permissions, Verdict};

use crate::classes::{Class, Found, classify};
use crate::compare;
use crate::generate;
use crate::mutate::{self, Op, Ops, PAYLOAD_OPS};
use crate::policy;
use crate::rng::{Rng, fnv};
use crate::sandbox::Sandbox;
use crate::seeds;
use crate::signature::{Reading, outcome_class, reading, skeleton};

/// The longest candidate the search keeps mutating.
const MAX_TEXT: usize = 480;
/// The most operators on one corpus entry's lineage before it stops being a parent.
const MAX_DEPTH: u8 = 10;

/// How much to search.
#[derive(Clone, Debug)]
pub(crate) struct Budget {
    /// Candidates analysed (executions).
    pub(crate) executions: usize,
    /// Candidates per batch.
    pub(crate) batch: usize,
    /// The most allowed candidates run under strace.
    pub(crate) runs: usize,
    /// Allowed commands of the sampling generator taken as seeds.
    pub(crate) generated_seeds: usize,
}

/// The corpus: entries, and their indices per seed program (a parent is drawn program first,
/// so a program with few seeds is mutated as often as one with many).
#[derive(Debug, Default)]
struct Corpus {
    entries: Vec<Entry>,
    by_program: Vec<(&'static str, Vec<usize>)>,
}

impl Corpus {
    fn push(&mut self, entry: Entry) {
        let index = self.entries.len();
        match self
            .by_program
            .iter_mut()
            .find(|(p, _)| *p == entry.program)
        {
            Some((_, list)) => list.push(index),
            None => self.by_program.push((entry.program, vec![index])),
        }
        self.entries.push(entry);
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    /// A parent: a program uniformly, then a quarter of the time one of its seeds, a quarter
    /// one of its newest 64 entries, else any of its entries.
    fn parent(&self, rng: &mut Rng) -> &Entry {
        let (_, list) = rng.pick(&self.by_program);
        let seeds = list
            .iter()
            .take_while(|i| self.entries[**i].depth == 0)
            .count();
        let index = match rng.below(4) {
            0 if seeds > 0 => list[rng.below(seeds)],
            1 if list.len() > 64 => list[list.len() - 64 + rng.below(64)],
            _ => *rng.pick(list),
        };
        &self.entries[index]
    }

    /// Any entry.
    fn any(&self, rng: &mut Rng) -> &Entry {
        rng.pick(&self.entries)
    }
}

/// One corpus entry.
#[derive(Clone, Debug)]
struct Entry {
    text: String,
    program: &'static str,
    ops: Ops,
    depth: u8,
}

/// What the search did.
#[derive(Debug, Default)]
pub(crate) struct Searched {
    /// Candidates analysed.
    pub(crate) executions: usize,
    /// Verdicts: allowed, asked, denied.
    pub(crate) verdicts: [usize; 3],
    /// Allowed candidates run under strace.
    pub(crate) runs: usize,
    /// Runs the time limit ended.
    pub(crate) timed_out: usize,
    /// The seeds the corpus started with.
    pub(crate) seeds: usize,
    /// The corpus' size at the end.
    pub(crate) corpus: usize,
    /// Distinct analysis signatures seen.
    pub(crate) signatures: usize,
    /// Distinct outcome classes seen.
    pub(crate) outcomes: usize,
    /// Every disagreement.
    pub(crate) found: Vec<Found>,
    /// Runs that failed to start or be read.
    pub(crate) errors: Vec<String>,
    /// Time spent analysing candidates.
    pub(crate) analysing: Duration,
    /// Time spent running under strace.
    pub(crate) running: Duration,
}

/// Runs the search with `seed` and `budget`, `jobs` threads at a time.
pub(crate) fn search(
    permissions: &Permissions,
    sandbox: &Sandbox,
    git_exec_path: &str,
    seed: u64,
    budget: &Budget,
    jobs: usize,
) -> Result<Searched, String> {
    let mut rng = Rng::new(seed);
    let mut corpus = initial_corpus(permissions, seed, budget.generated_seeds)?;
    let mut out = Searched {
        seeds: corpus.len(),
        ..Searched::default()
    };
    let mut seen: HashSet<u64> = corpus
        .entries
        .iter()
        .map(|e| fnv(e.text.as_bytes()))
        .collect();
    let mut signatures: HashSet<(&'static str, u64)> = HashSet::new();
    let mut run_keys: HashSet<u64> = HashSet::new();
    let mut outcomes: HashSet<u64> = HashSet::new();
    let mut run_shapes: HashSet<u64> = HashSet::new();
    let mut allowed_shapes: HashSet<(&'static str, Ops)> = HashSet::new();
    let batches = budget.executions.div_ceil(budget.batch.max(1)).max(1);
    let mut last_report = Instant::now();
    let started = Instant::now();
    while out.executions < budget.executions {
        let size = budget.batch.min(budget.executions - out.executions);
        let candidates = draw(&mut rng, &corpus, &mut seen, size);
        if candidates.is_empty() {
            return Err("the search could not draw a new candidate".to_owned());
        }
        let analysing = Instant::now();
        let readings = read_all(permissions, &candidates, jobs)?;
        out.analysing += analysing.elapsed();
        out.executions += candidates.len();
        // Three tiers of allowed candidates not run before: 0, a payload the analysis does not
        // predict, the first of its shape (program, operators); 1, such a payload otherwise;
        // 2, the rest.
        let mut tiers: [Vec<Chosen<'_>>; 3] = [Vec::new(), Vec::new(), Vec::new()];
        let mut tier_keys: HashSet<u64> = HashSet::new();
        let mut batch_shapes: HashSet<u64> = HashSet::new();
        for (entry, reading) in candidates.iter().zip(&readings) {
            out.verdicts[match reading.verdict {
                Verdict::Allow => 0,
                Verdict::Ask => 1,
                _ => 2,
            }] += 1;
            if signatures.insert((entry.program, reading.signature))
                && entry.depth < MAX_DEPTH
                && entry.text.len() <= MAX_TEXT
            {
                corpus.push(entry.clone());
            }
            if reading.verdict != Verdict::Allow {
                continue;
            }
            // An allowed candidate with a new set of operators for its program is a base the
            // analysis still vouches for: the next payload goes on it.
            if allowed_shapes.insert((entry.program, entry.ops))
                && entry.depth < MAX_DEPTH
                && entry.text.len() <= MAX_TEXT
            {
                corpus.push(entry.clone());
            }
            let key = format!(
                "{}|{}|{}",
                entry.program,
                skeleton(&entry.text),
                reading.signature
            );
            let key = fnv(key.as_bytes());
            if run_keys.contains(&key) || !tier_keys.insert(key) {
                continue;
            }
            let shape = fnv(format!("{}|{}", entry.program, entry.ops.0).as_bytes());
            let tier = if entry.ops.any(PAYLOAD_OPS) && suspicious(&entry.text, reading) {
                if !run_shapes.contains(&shape) && batch_shapes.insert(shape) {
                    0
                } else {
                    1
                }
            } else {
                2
            };
            tiers[tier].push(Chosen {
                key,
                shape,
                entry,
                reading,
            });
        }
        // This batch's share of the runs left: tier 0 first, then tier 1, a tenth kept for
        // tier 2; within a tier, pairings first ([`pairing`]), then shallow lineages, and the
        // seed programs take turns.
        let batches_left = batches.saturating_sub(out.executions / budget.batch.max(1)) + 1;
        let share = (budget.runs - out.runs).div_ceil(batches_left);
        let [mut first, mut second, mut third] = tiers;
        for tier in [&mut first, &mut second, &mut third] {
            tier.sort_by_key(|c| (std::cmp::Reverse(pairing(c.entry)), c.entry.depth));
        }
        let third = round_robin(third);
        let for_plain = (share / 10).max(share.saturating_sub(first.len() + second.len()));
        let mut chosen: Vec<Chosen<'_>> = Vec::with_capacity(share);
        for candidate in round_robin(first).into_iter().chain(round_robin(second)) {
            if chosen.len() + for_plain.min(third.len()) >= share {
                break;
            }
            chosen.push(candidate);
        }
        chosen.extend(third.into_iter().take(share.saturating_sub(chosen.len())));
        for c in &chosen {
            run_keys.insert(c.key);
            run_shapes.insert(c.shape);
        }
        let running = Instant::now();
        let results = run_all(sandbox, git_exec_path, &chosen, jobs);
        out.running += running.elapsed();
        for (Chosen { entry, .. }, result) in chosen.iter().zip(results) {
            out.runs += 1;
            match result {
                Ok((findings, class_key, timed_out)) => {
                    out.timed_out += usize::from(timed_out);
                    if outcomes.insert(class_key)
                        && entry.depth < MAX_DEPTH
                        && entry.text.len() <= MAX_TEXT
                    {
                        corpus.push((*entry).clone());
                    }
                    if !findings.is_empty() {
                        let class = classify(entry.program, entry.ops, &entry.text, &findings);
                        out.found.push(Found {
                            command: entry.text.clone(),
                            program: entry.program,
                            ops: entry.ops,
                            findings,
                            class,
                        });
                    }
                }
                Err(message) => out.errors.push(format!("{:?}: {message}", entry.text)),
            }
        }
        if last_report.elapsed() >= Duration::from_secs(30) {
            last_report = Instant::now();
            eprintln!(
                "oracle search: {} executions, {} runs, corpus {}, {} disagreements ({:.0?})",
                out.executions,
                out.runs,
                corpus.len(),
                out.found.len(),
                started.elapsed()
            );
        }
    }
    out.corpus = corpus.len();
    out.signatures = signatures.len();
    out.outcomes = outcomes.len();
    Ok(out)
}

/// Whether an allowed candidate's text names a payload the analysis does not predict: a canary
/// or denied program that is not among the predicted programs, an output option (`--output`,
/// `-o`), or an awk statement that runs or writes (`system(`, `getline`, `print >`, a pipe to a
/// string). Any allow of such a text is where an unsafe answer hides, so they run first.
fn suspicious(text: &str, reading: &Reading) -> bool {
    let hidden_program = ["canary", "touch", "rm"]
        .iter()
        .any(|p| text.contains(p) && !reading.programs.contains(*p));
    hidden_program
        || text.contains("--output")
        || text
            .split_whitespace()
            .any(|w| w.starts_with("-o") && !w.starts_with("-on"))
        || ["system(", "getline", "print >", "print |", "| \""]
            .iter()
            .any(|t| text.contains(t))
}

/// How many of the pairings where a hiding operator meets the payload it can hide a candidate
/// holds: a shell spelling (continuation, escaped blank, TAB, `#`, comment, quote, newline) with
/// a shell payload; awk's `/` with an awk payload; an option spelling with an arity probe. A
/// candidate that pairs them is tried before one that only carries a payload.
fn pairing(entry: &Entry) -> u8 {
    let ops = entry.ops;
    let shell = ops.has(Op::Payload)
        && ops.any(&[
            Op::Continuation,
            Op::EscapedSpace,
            Op::Tab,
            Op::Hash,
            Op::Comment,
            Op::Quote,
            Op::Newline,
        ]);
    let awk = ops.has(Op::AwkPayload) && ops.has(Op::AwkSlash);
    let arity = ops.has(Op::Arity) && (ops.has(Op::OptionSpelling) || ops.0 == Op::Arity.bit());
    u8::from(shell) + u8::from(awk) * 2 + u8::from(arity)
}

/// The hand-written seeds and the allowed commands of the sampling generator.
fn initial_corpus(
    permissions: &Permissions,
    seed: u64,
    generated: usize,
) -> Result<Corpus, String> {
    let mut out = Corpus::default();
    for (program, text) in seeds::HAND {
        out.push(Entry {
            text: (*text).to_owned(),
            program,
            ops: Ops::default(),
            depth: 0,
        });
    }
    if generated > 0 {
        for g in generate::corpus(seed, generated * 4) {
            if out.len() >= seeds::HAND.len() + generated {
                break;
            }
            if policy::verdict(permissions, &g.text)? == Verdict::Allow {
                out.push(Entry {
                    program: seeds::program_of(&g.text),
                    text: g.text,
                    ops: Ops::default(),
                    depth: 0,
                });
            }
        }
    }
    Ok(out)
}

/// `size` new candidates: each a corpus entry ([`Corpus::parent`]) with one to four operators
/// applied.
fn draw(rng: &mut Rng, corpus: &Corpus, seen: &mut HashSet<u64>, size: usize) -> Vec<Entry> {
    let mut out = Vec::with_capacity(size);
    let mut attempts = 0usize;
    while out.len() < size && attempts < size * 50 {
        attempts += 1;
        let parent = corpus.parent(rng);
        let mut text = parent.text.clone();
        let mut ops = parent.ops;
        let mut count = 1;
        while count < 4 && rng.chance(1, 2) {
            count += 1;
        }
        let mut applied = 0u8;
        for _ in 0..count {
            for _ in 0..8 {
                let op = mutate::draw(rng, parent.program);
                let other = if op == Op::Splice && text.len() < MAX_TEXT / 2 {
                    corpus.any(rng).text.as_str()
                } else {
                    ""
                };
                if let Some(next) = mutate::apply(rng, op, &text, parent.program, other) {
                    text = next;
                    ops = ops.with(op);
                    applied += 1;
                    break;
                }
            }
        }
        if applied == 0 || !seen.insert(fnv(text.as_bytes())) {
            continue;
        }
        out.push(Entry {
            text,
            program: parent.program,
            ops,
            depth: parent.depth.saturating_add(applied),
        });
    }
    out
}

/// The analysis' reading of every candidate, `jobs` threads at a time, in candidate order.
fn read_all(
    permissions: &Permissions,
    candidates: &[Entry],
    jobs: usize,
) -> Result<Vec<Reading>, String> {
    let chunk = candidates.len().div_ceil(jobs.max(1)).max(1);
    let parts: Vec<Result<Vec<Reading>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = candidates
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|entry| {
                            policy::verdict(permissions, &entry.text)
                                .map(|verdict| reading(verdict, &entry.text))
                        })
                        .collect::<Result<Vec<_>, String>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("an analysis thread panicked".into()))
            })
            .collect()
    });
    let mut out = Vec::with_capacity(candidates.len());
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// An allowed candidate chosen to run: its run key (program, skeleton, signature), its shape
/// (program, operators), the candidate and its reading.
struct Chosen<'a> {
    key: u64,
    shape: u64,
    entry: &'a Entry,
    reading: &'a Reading,
}

/// The candidates reordered so the seed programs take turns (each program's in order).
fn round_robin(list: Vec<Chosen<'_>>) -> Vec<Chosen<'_>> {
    let mut queues: Vec<(&'static str, std::collections::VecDeque<Chosen<'_>>)> = Vec::new();
    for c in list {
        match queues.iter_mut().find(|(p, _)| *p == c.entry.program) {
            Some((_, q)) => q.push_back(c),
            None => {
                let program = c.entry.program;
                queues.push((program, std::collections::VecDeque::from([c])));
            }
        }
    }
    let mut out = Vec::new();
    loop {
        let mut any = false;
        for (_, q) in &mut queues {
            if let Some(c) = q.pop_front() {
                out.push(c);
                any = true;
            }
        }
        if !any {
            return out;
        }
    }
}

/// What one run gave: its findings, its outcome class, whether the time limit ended it.
type RunResult = Result<(Vec<compare::Finding>, u64, bool), String>;

/// Runs the chosen candidates under strace, `jobs` at a time, results in candidate order.
fn run_all(
    sandbox: &Sandbox,
    git_exec_path: &str,
    chosen: &[Chosen<'_>],
    jobs: usize,
) -> Vec<RunResult> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, RunResult)>> = Mutex::new(Vec::with_capacity(chosen.len()));
    std::thread::scope(|scope| {
        for slot in 0..jobs.max(1) {
            let (next, results) = (&next, &results);
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(Chosen { entry, reading, .. }) = chosen.get(index) else {
                        break;
                    };
                    let result = sandbox.run(&entry.text, slot).map(|observed| {
                        let programs: &BTreeSet<String> = &reading.programs;
                        (
                            compare::findings(programs, &observed, git_exec_path),
                            outcome_class(entry.program, &observed),
                            observed.timed_out,
                        )
                    });
                    if let Ok(mut all) = results.lock() {
                        all.push((index, result));
                    }
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|(index, _)| *index);
    results.into_iter().map(|(_, r)| r).collect()
}

/// The counts of a search, one line each, for the report.
pub(crate) fn summary_line(searched: &Searched, seed: u64, elapsed: Duration) -> String {
    let per_class: Vec<String> = Class::ALL
        .iter()
        .map(|c| {
            let n = searched.found.iter().filter(|f| f.class == *c).count();
            format!("{}: {n}", c.label())
        })
        .collect();
    format!(
        "\noracle search (seed {seed}): {} executions (candidates analysed: allowed {}, asked {}, \
         denied {}); {} allowed candidates run under strace ({} timed out); seeds {}, corpus {}, \
         {} analysis signatures, {} outcome classes; disagreements {} ({}); analysis {:.1?}, \
         runs {:.1?}, total {:.1?}\n",
        searched.executions,
        searched.verdicts[0],
        searched.verdicts[1],
        searched.verdicts[2],
        searched.runs,
        searched.timed_out,
        searched.seeds,
        searched.corpus,
        searched.signatures,
        searched.outcomes,
        searched.found.len(),
        per_class.join("; "),
        searched.analysing,
        searched.running,
        elapsed,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawing_is_deterministic_and_never_repeats() {
        let mut corpus = Corpus::default();
        for (program, text) in seeds::HAND {
            corpus.push(Entry {
                text: (*text).to_owned(),
                program,
                ops: Ops::default(),
                depth: 0,
            });
        }
        let mut seen_a = HashSet::new();
        let mut seen_b = HashSet::new();
        let a = draw(&mut Rng::new(9), &corpus, &mut seen_a, 500);
        let b = draw(&mut Rng::new(9), &corpus, &mut seen_b, 500);
        let texts = |v: &[Entry]| v.iter().map(|e| e.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&a), texts(&b));
        assert_eq!(a.len(), 500);
        let distinct: HashSet<&str> = a.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(distinct.len(), 500);
        assert!(a.iter().all(|e| e.ops != Ops::default()));
    }
}
