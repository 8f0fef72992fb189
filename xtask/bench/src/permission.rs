//! `Permissions::check` for a 5-command script against 200 rules, against the bare
//! tree-sitter-bash parse of the same script.

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
    Ok(vec![Row {
        name: "permission check, 5-command script, 200 rules".to_owned(),
        value: check.as_nanos() as f64,
        unit: "ns",
        baseline: "tree-sitter-bash parse, same script".to_owned(),
        baseline_value: parse.as_nanos() as f64,
    }])
}
