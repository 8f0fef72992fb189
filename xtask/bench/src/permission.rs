//! `Permissions::check` for a 5-command script against 200 rules, against the bare
//! tree-sitter-bash parse of the same script; and the analysis of distinct commands (bash
//! reads each first, in a sealed spare started ahead of time), p50 and p99, against
//! tree-sitter's reading alone (the analysis before bash read first) and against a fresh
//! sealed bash forked for each reading (the analysis before spares), in the same run.

use std::hint::black_box;

use mux_permission::{
    PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict, builtin, command,
};
use mux_tool::Subject;

use crate::harness::{Row, per_iter};

const SAMPLES: usize = 15;
const ITERS: u32 = 2_000;
const SCRIPT: &str =
    "git status && git diff HEAD~1 -- src | grep -n 'fn main'; ls -la && cargo test --workspace";

/// 200 rules over three scopes: 150 allow, 30 ask, 20 deny, of which the script needs five.
fn permissions() -> Result<Permissions, String> {
    let fail = |err: mux_permission::RuleError| err.to_string();
    let mut project = RuleSet::new();
    for i in 0..145 {
        project = project
            .with_allow(&format!("Bash(tool{i} sub{i}:*)"))
            .map_err(fail)?;
    }
    for rule in [
        "Bash(git status)",
        "Bash(git diff:*)",
        "Bash(grep:*)",
        "Bash(ls:*)",
        "Bash(cargo test:*)",
    ] {
        project = project.with_allow(rule).map_err(fail)?;
    }
    let mut global = RuleSet::new();
    for i in 0..30 {
        global = global
            .with_ask(&format!("Bash(deploy{i} *)"))
            .map_err(fail)?;
    }
    let mut managed = RuleSet::new();
    for i in 0..20 {
        managed = managed
            .with_deny(&format!("Bash(danger{i}:*)"))
            .map_err(fail)?;
    }
    Ok(
        Permissions::builder(PathContext::with_home("/nonexistent", None))
            .scope(Scope::Managed, ScopeRules::new(managed))
            .scope(Scope::Global, ScopeRules::new(global))
            .scope(Scope::Project, ScopeRules::new(project))
            .build(),
    )
}

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let permissions = permissions()?;
    let bash = builtin::spec("Bash").ok_or("no Bash spec")?;
    let subject = Subject::command(SCRIPT);
    let decision = permissions.check(&bash, &subject);
    if decision.verdict != Verdict::Allow {
        return Err(format!(
            "the benchmark script is not allowed: {}",
            decision.reason
        ));
    }
    if command::analyze(SCRIPT).commands.len() != 5 {
        return Err("the benchmark script is not five commands".into());
    }
    let check = per_iter(SAMPLES, ITERS, |iters| {
        for _ in 0..iters {
            black_box(permissions.check(black_box(&bash), black_box(&subject)));
        }
    });
    let parse = per_iter(SAMPLES, ITERS, |iters| {
        for _ in 0..iters {
            black_box(command::parse_only(black_box(SCRIPT)));
        }
    });
    let mut rows = vec![Row {
        name: "permission check, 5-command script, 200 rules".to_owned(),
        value: check.as_nanos() as f64,
        unit: "ns",
        baseline: "tree-sitter-bash parse, same script".to_owned(),
        baseline_value: parse.as_nanos() as f64,
    }];
    rows.extend(distinct_commands());
    Ok(rows)
}

/// How many distinct commands each reading analyses.
const DISTINCT: usize = 2_000;

/// Command `i` of a mix a coding agent runs: chains, pipes, quotes, an `sh -c` string, awk and
/// git with options. Each is new, so no reading is cached. Most have no character that could
/// hide another, so tree-sitter's reading is bash's; see [`bash_reads`] for the others.
fn agent_mix(i: usize) -> String {
    match i % 7 {
        0 => format!("cargo test -p crate{i} --lib && cargo clippy -p crate{i}"),
        1 => format!("git status && git diff --stat main..feature{i} | tail -n 5"),
        2 => format!("git status && git diff HEAD~{i} -- src | grep -n 'fn main{i}'"),
        3 => format!("ls -la src/{i} | wc -l; echo \"done {i}\""),
        4 => format!("sh -c 'cat notes{i}.txt | head -n {i}'"),
        5 => format!("awk -F, '{{ print $1, ${} }}' data{i}.csv", i % 7 + 1),
        _ => format!("git log --oneline -n {i} --format=%h%x20%s | sort | uniq -c"),
    }
}

/// Command `i` of a mix that bash must read first: a comment, a variable, a glob, an escape, a
/// redirection.
fn bash_reads(i: usize) -> String {
    match i % 5 {
        0 => format!("grep -rn 'fn main{i}' src # where the mains are"),
        1 => format!("ls $HOME/notes{i} | wc -l"),
        2 => format!("cat src/*.rs | grep -c fn{i}"),
        3 => format!("echo a\\ b{i} && ls ./dir\\ {i}"),
        _ => format!("cargo build -p crate{i} 2>&1 >/dev/null | tail -n {i}"),
    }
}

/// Latencies of `analyse` over [`DISTINCT`] commands of `mix` starting at `offset`, sorted.
fn latencies(
    mix: fn(usize) -> String,
    offset: usize,
    analyse: impl Fn(&str),
) -> Vec<std::time::Duration> {
    let mut out: Vec<std::time::Duration> = (offset..offset + DISTINCT)
        .map(|i| {
            let command = mix(i);
            let started = std::time::Instant::now();
            analyse(&command);
            started.elapsed()
        })
        .collect();
    out.sort();
    out
}

fn quantile(sorted: &[std::time::Duration], q: f64) -> f64 {
    let at = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[at].as_nanos() as f64 / 1_000.0
}

fn distinct_commands() -> Vec<Row> {
    let mut rows = Vec::new();
    for (label, mix) in [
        ("an agent's commands", agent_mix as fn(usize) -> String),
        ("commands bash must read", bash_reads),
    ] {
        // Warm each (the parser, bash's pages, the spares), then alternate halves so load
        // hits each alike. Each reading gets commands of its own (no cached reading).
        let _ = latencies(mix, 10 * DISTINCT, |c| {
            black_box(command::analyze(c));
        });
        let _ = latencies(mix, 11 * DISTINCT, |c| {
            black_box(command::analyze_cold_bash(c));
        });
        let (mut read, mut cold, mut alone) = (Vec::new(), Vec::new(), Vec::new());
        for half in 0..2 {
            read.extend(latencies(mix, half * DISTINCT, |c| {
                black_box(command::analyze(c));
            }));
            cold.extend(latencies(mix, (20 + half) * DISTINCT, |c| {
                black_box(command::analyze_cold_bash(c));
            }));
            alone.extend(latencies(mix, half * DISTINCT, |c| {
                black_box(command::tree_sitter_reading(c));
            }));
        }
        read.sort();
        cold.sort();
        alone.sort();
        for (name, q) in [("p50", 0.5), ("p99", 0.99)] {
            rows.push(Row {
                name: format!("command analysis as bash reads, {label}, distinct, {name}"),
                value: quantile(&read, q),
                unit: "µs",
                baseline: format!("tree-sitter's reading alone (the analysis before), {name}"),
                baseline_value: quantile(&alone, q),
            });
            rows.push(Row {
                name: format!("bash reads in a waiting sealed spare, {label}, {name}"),
                value: quantile(&read, q),
                unit: "µs",
                baseline: format!("a fresh sealed bash each (before), {name}"),
                baseline_value: quantile(&cold, q),
            });
        }
    }
    rows
}
