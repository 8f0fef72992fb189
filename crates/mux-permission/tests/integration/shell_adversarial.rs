//! The adversarial shell suites: every case of `adversarial/shell_cases.json` (issue 15,
//! classes 1–6, written by `adversarial/gen_shell_cases.py`) and of
//! `adversarial/model_cases.json` (issue 23, classes 2–7 and 10, written by
//! `adversarial/gen_model_cases.py`) must end with its expected verdict under its settings
//! profile and mode. The strings are only analysed, never run.

use std::collections::BTreeMap;

use mux_permission::{
    Mode, PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict, builtin,
};
use mux_tool::Subject;
use serde_json::Value;

const CASES: &str = include_str!("adversarial/shell_cases.json");
const MODEL_CASES: &str = include_str!("adversarial/model_cases.json");

fn profile(rules: &Value, mode: Mode) -> Permissions {
    let mut set = RuleSet::new().with_mode(mode);
    for (kind, list) in rules.as_object().unwrap() {
        for rule in list.as_array().unwrap() {
            let rule = rule.as_str().unwrap();
            set = match kind.as_str() {
                "allow" => set.with_allow(rule),
                "ask" => set.with_ask(rule),
                "deny" => set.with_deny(rule),
                other => panic!("bad kind {other}"),
            }
            .unwrap_or_else(|err| panic!("{rule}: {err}"));
        }
    }
    Permissions::builder(PathContext::new("/nonexistent/project"))
        .scope(Scope::Project, ScopeRules::new(set))
        .build()
}

fn verdict(name: &str) -> Verdict {
    match name {
        "allow" => Verdict::Allow,
        "ask" => Verdict::Ask,
        "deny" => Verdict::Deny,
        other => panic!("bad verdict {other}"),
    }
}

/// Runs a suite; returns the passed and total count per class, and the failures.
fn run(cases: &str) -> (BTreeMap<String, (usize, usize)>, Vec<String>) {
    let suite: Value = serde_json::from_str(cases).unwrap();
    let bash = builtin::spec("Bash").unwrap();
    let mut per_class: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut policies: BTreeMap<(String, String), Permissions> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in suite["cases"].as_array().unwrap() {
        let class = match &case["class"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let command = case["command"].as_str().unwrap();
        let expect = verdict(case["expect"].as_str().unwrap());
        let mode: Mode = case["mode"].as_str().unwrap().parse().unwrap();
        let name = case["profile"].as_str().unwrap();
        // Building a policy parses and compiles every rule: once per profile and mode.
        let policy = policies
            .entry((name.to_owned(), mode.to_string()))
            .or_insert_with(|| profile(&suite["profiles"][name], mode));
        let decision = policy.check(&bash, &Subject::command(command));
        let entry = per_class.entry(class.clone()).or_default();
        entry.1 += 1;
        if decision.verdict == expect {
            entry.0 += 1;
        } else {
            failures.push(format!(
                "class {class}: {command:?} ({mode}) expected {expect:?}, got {:?}: {}",
                decision.verdict, decision.reason
            ));
        }
    }
    (per_class, failures)
}

#[test]
fn adversarial_shell_cases_end_as_expected() {
    let (per_class, failures) = run(CASES);
    for (class, (passed, total)) in &per_class {
        println!("class {class}: {passed}/{total} pass");
    }
    let attacks: usize = per_class
        .iter()
        .filter(|(class, _)| class.as_str() != "control")
        .map(|(_, (_, total))| total)
        .sum();
    assert!(attacks >= 150, "only {attacks} adversarial cases");
    for class in ["1", "2", "3", "4", "5", "6"] {
        let total = per_class.get(class).map_or(0, |c| c.1);
        assert!(total >= 20, "class {class} has only {total} cases");
    }
    assert!(
        failures.is_empty(),
        "{} of the shell cases fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn issue_23_cases_end_as_expected() {
    let (per_class, failures) = run(MODEL_CASES);
    for (class, (passed, total)) in &per_class {
        println!("class {class}: {passed}/{total} pass");
    }
    for class in ["2", "3", "4", "5", "6", "7", "10"] {
        let total = per_class.get(class).map_or(0, |c| c.1);
        assert!(total >= 40, "class {class} has only {total} cases");
    }
    assert!(
        failures.is_empty(),
        "{} of the issue 23 cases fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
