//! Properties: a compound command is allowed exactly when every part is; adding a deny rule
//! never turns a decision into allow.

use crate::real_programs::verdict;
use mux_permission::{Mode, PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict};
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "git", "status", "diff", "log", "ls", "-la", "rm", "-rf", "/", "echo", "cat", "npm", "run",
    "test", "'a b'", "\"c d\"", "$(id)", "`id`", "$HOME", "*.txt", "sudo", "sh", "-c", "x",
    "FOO=1", "> out", "2>&1", "find", "-exec", "{}", "\\;", "curl", "|", "xargs",
];
const OPERATORS: &[&str] = &[" && ", " || ", "; ", " | ", "\n"];
const RULE_WORDS: &[&str] = &[
    "git", "status", "diff", "ls", "rm", "echo", "cat", "npm", "run", "x", "sh", "curl",
];

fn simple_command() -> impl Strategy<Value = String> {
    // A part starts with a command word, so that every part is a command of its own.
    (
        prop::sample::select(
            &[
                "git", "ls", "rm", "echo", "cat", "npm", "sudo", "find", "curl",
            ][..],
        ),
        prop::collection::vec(prop::sample::select(WORDS), 0..4),
    )
        .prop_map(|(name, args)| {
            // Operators inside a part would split it; keep parts single commands.
            let args: Vec<&str> = args.into_iter().filter(|w| *w != "|").collect();
            std::iter::once(name)
                .chain(args)
                .collect::<Vec<_>>()
                .join(" ")
        })
}

fn rule() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(prop::sample::select(RULE_WORDS), 1..3),
        0..4usize,
    )
        .prop_map(|(words, form)| match form {
            0 => format!("Bash({})", words.join(" ")),
            1 => format!("Bash({}:*)", words.join(" ")),
            2 => format!("Bash({} *)", words.join(" ")),
            _ => "Bash".to_owned(),
        })
}

fn mode() -> impl Strategy<Value = Mode> {
    prop::sample::select(Mode::ALL.to_vec())
}

fn permissions(allow: &[String], ask: &[String], deny: &[String], mode: Mode) -> Permissions {
    let mut rules = RuleSet::new().with_mode(mode);
    for r in allow {
        rules = rules.with_allow(r).unwrap();
    }
    for r in ask {
        rules = rules.with_ask(r).unwrap();
    }
    for r in deny {
        rules = rules.with_deny(r).unwrap();
    }
    Permissions::builder(PathContext::with_home("/nonexistent", None))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_compound_is_allowed_exactly_when_every_part_is(
        parts in prop::collection::vec(simple_command(), 1..5),
        operators in prop::collection::vec(prop::sample::select(OPERATORS), 4),
        allow in prop::collection::vec(rule(), 0..6),
        deny in prop::collection::vec(rule().prop_filter("not bare", |r| r != "Bash"), 0..2),
    ) {
        let permissions = permissions(&allow, &[], &deny, Mode::Default);
        let mut script = parts[0].clone();
        for (part, op) in parts[1..].iter().zip(&operators) {
            script.push_str(op);
            script.push_str(part);
        }
        let whole = verdict(&permissions, &script);
        let each: Vec<Verdict> = parts.iter().map(|p| verdict(&permissions, p)).collect();
        let all_allowed = each.iter().all(|v| *v == Verdict::Allow);
        prop_assert_eq!(
            whole == Verdict::Allow,
            all_allowed,
            "script {:?}: whole {:?}, parts {:?}",
            script,
            whole,
            each
        );
        if each.contains(&Verdict::Deny) {
            prop_assert_eq!(whole, Verdict::Deny, "a denied part denies the whole: {:?}", script);
        }
    }

    #[test]
    fn adding_a_deny_rule_never_produces_allow(
        parts in prop::collection::vec(simple_command(), 1..4),
        allow in prop::collection::vec(rule(), 0..6),
        ask in prop::collection::vec(rule(), 0..2),
        deny in prop::collection::vec(rule(), 0..2),
        extra in rule(),
        mode in mode(),
    ) {
        let script = parts.join(" && ");
        let before = verdict(&permissions(&allow, &ask, &deny, mode), &script);
        let mut more = deny.clone();
        more.push(extra.clone());
        let after = verdict(&permissions(&allow, &ask, &more, mode), &script);
        prop_assert!(
            after != Verdict::Allow || before == Verdict::Allow,
            "adding deny {:?} turned {:?} into allow for {:?}",
            extra,
            before,
            script
        );
        if before == Verdict::Deny {
            prop_assert_eq!(after, Verdict::Deny);
        }
    }
}
