//! The runner against a real agent loop on a scripted model: approvals answered by each
//! case's script, trajectories, budgets, timeouts, repeats, concurrency, conversations,
//! typed output and datasets read from files.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mux_eval::{
    Approvals, Case, CaseBudget, Dataset, EvaluatorSpec, ExpectedCall, Order, PassRule, Runner,
    Trajectory, assert_dataset, check_dataset, target,
};
use mux_llm::Response;
use mux_llm::testing::ScriptedClient;
use serde_json::json;

use crate::support::{agent, agent_on};

#[tokio::test]
async fn approvals_follow_each_cases_script_and_trajectories_are_scored() {
    let delete = r#"call delete {"key": "k1"}"#;
    let dataset = Dataset::new("approvals")
        .case(
            Case::new("allowed", delete)
                .approvals(Approvals {
                    allow: vec!["delete".into()],
                    ..Approvals::default()
                })
                .expect_output("done: deleted k1")
                .evaluator(EvaluatorSpec::ApprovalAsked {
                    tool: Some("delete".into()),
                    asked: true,
                }),
        )
        .case(
            Case::new("denied", delete)
                .evaluator(EvaluatorSpec::ApprovalAsked {
                    tool: Some("delete".into()),
                    asked: true,
                })
                .expect_output("done: deleted k1"),
        )
        .case(
            Case::new(
                "read-only",
                r#"call lookup {"key": "a"} then call lookup {"key": "b"}"#,
            )
            .expect_tools(Trajectory::new(
                Order::Exact,
                [
                    ExpectedCall::tool("lookup").arg("key", mux_eval::ArgMatcher::equals("a")),
                    ExpectedCall::tool("lookup").arg("key", mux_eval::ArgMatcher::equals("b")),
                ],
            ))
            .evaluator(EvaluatorSpec::ApprovalAsked {
                tool: None,
                asked: false,
            }),
        );
    let report = Runner::new(agent())
        .progress(false)
        .run(&dataset)
        .await
        .unwrap();
    let allowed = report.case("allowed").unwrap();
    assert!(allowed.passed(), "{}", report.to_json());
    let run = &allowed.attempts[0].run;
    assert_eq!(run.approvals.len(), 1);
    assert!(run.approvals[0].allowed);
    assert_eq!(run.tool_calls[0].output, "deleted k1");

    let denied = report.case("denied").unwrap();
    assert!(!denied.passed());
    let run = &denied.attempts[0].run;
    assert!(!run.approvals[0].allowed);
    assert!(run.tool_calls[0].is_error, "{:?}", run.tool_calls);
    // The approval was asked (that verdict passes); the output differs (that one fails).
    let verdicts = &denied.attempts[0].verdicts;
    assert!(
        verdicts[0].score.passed && !verdicts[1].score.passed,
        "{verdicts:?}"
    );

    let read_only = report.case("read-only").unwrap();
    assert!(read_only.passed(), "{:?}", read_only.first_problem());
    assert_eq!(read_only.attempts[0].run.model_calls, 3);
    assert_eq!(read_only.attempts[0].run.usage.input_tokens, 30);
    // Failures first in the table.
    let table = mux_eval::table::render(&report);
    let denied_at = table.find("denied").unwrap();
    assert!(denied_at < table.find("allowed").unwrap(), "{table}");
}

#[tokio::test]
async fn budgets_and_timeouts_stop_an_attempt_with_a_typed_failure() {
    let dataset = Dataset::new("budgets")
        .case(Case::new("runaway", "loop").budget(CaseBudget {
            max_tool_calls: Some(3),
            ..CaseBudget::default()
        }))
        .case(Case::new("tokens", "loop").budget(CaseBudget {
            max_tokens: Some(40),
            ..CaseBudget::default()
        }))
        .case(Case::new("stuck", "call wait {}"))
        .case(Case::new("fine", "say hi").expect_output("hi"));
    let report = Runner::new(agent())
        .budget(CaseBudget {
            timeout_secs: Some(0.5),
            ..CaseBudget::default()
        })
        .run(&dataset)
        .await
        .unwrap();
    let kind = |name: &str| {
        report.case(name).unwrap().attempts[0]
            .run
            .failure
            .as_ref()
            .map(|f| f.kind.clone())
    };
    assert_eq!(kind("runaway").as_deref(), Some("budget"));
    assert_eq!(kind("tokens").as_deref(), Some("budget"));
    assert_eq!(kind("stuck").as_deref(), Some("timeout"));
    assert_eq!(kind("fine"), None);
    assert!(report.case("fine").unwrap().passed());
    assert_eq!(report.totals().failed, 3);
    let runaway = &report.case("runaway").unwrap().attempts[0];
    assert_eq!(runaway.score, 0.0);
    assert!(
        runaway
            .first_problem()
            .unwrap()
            .contains("4 tool calls, over the budget of 3")
    );
}

#[tokio::test]
async fn repeats_give_pass_rate_spread_and_pass_at_k() {
    // A model that is right every other time.
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    let model = ScriptedClient::new().respond_with(move |_| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        Ok(Response::from_text(if n.is_multiple_of(2) {
            "yes"
        } else {
            "no"
        }))
    });
    let dataset = Dataset::new("flaky").case(Case::new("coin", "?").expect_output("yes"));
    let all = Runner::new(agent_on(Arc::new(model.clone())))
        .repeats(4)
        .concurrency(1)
        .run(&dataset)
        .await
        .unwrap();
    let stats = &all.cases[0].stats;
    assert_eq!((stats.attempts, stats.passes), (4, 2));
    assert!((stats.pass_rate - 0.5).abs() < 1e-9 && (stats.spread - 0.5).abs() < 1e-9);
    assert!(!stats.passed);
    assert!(
        stats
            .pass_at(2)
            .is_some_and(|p| (p - 5.0 / 6.0).abs() < 1e-9)
    );
    let any = Runner::new(agent_on(Arc::new(model)))
        .repeats(4)
        .rule(PassRule::Any)
        .run(&dataset)
        .await
        .unwrap();
    assert!(any.passed());
}

#[tokio::test]
async fn many_cases_at_once_keep_their_order_and_fresh_conversations() {
    let mut dataset = Dataset::new("many");
    for i in 0..24 {
        dataset = dataset.case(
            Case::new(
                format!("case-{i}"),
                format!(r#"call lookup {{"key": "k{i}"}}"#),
            )
            .expect_output(format!("done: value of k{i}")),
        );
    }
    let report = Runner::new(agent())
        .concurrency(8)
        .run(&dataset)
        .await
        .unwrap();
    assert!(report.passed(), "{}", mux_eval::table::render(&report));
    let names: Vec<&str> = report.cases.iter().map(|c| c.name.as_str()).collect();
    let expected: Vec<String> = (0..24).map(|i| format!("case-{i}")).collect();
    assert_eq!(names, expected);
    // Each attempt saw only its own prompt: one user message in its first request.
    assert!(
        report
            .cases
            .iter()
            .all(|c| c.attempts[0].run.model_calls == 2)
    );
}

#[tokio::test]
async fn a_conversation_runs_its_messages_on_one_session() {
    let model = ScriptedClient::new().respond_with(|request| {
        let prompts = request
            .messages
            .iter()
            .filter(|m| m.role == mux_llm::Role::User)
            .filter_map(|m| m.content.iter().find_map(|b| b.as_text()))
            .collect::<Vec<_>>()
            .join("|");
        Ok(Response::from_text(prompts))
    });
    let case = Case::new(
        "chat",
        mux_eval::Input::Conversation(vec!["one".into(), "two".into()]),
    )
    .expect_output("one|two");
    let report = Runner::new(agent_on(Arc::new(model)))
        .run(&Dataset::new("chat").case(case))
        .await
        .unwrap();
    assert!(report.passed(), "{}", report.to_json());
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, PartialEq, Debug)]
struct Capital {
    country: String,
    city: String,
}

#[tokio::test]
async fn typed_cases_compare_structured_output() {
    let model = ScriptedClient::new().respond_with(|request| {
        let asked = request.messages[0]
            .content
            .iter()
            .find_map(|b| b.as_text())
            .unwrap_or("");
        let city = if asked.contains("Peru") {
            "Lima"
        } else {
            "Quito"
        };
        Ok(Response::from_text(format!(
            r#"{{"city": "{city}", "country": "x"}}"#
        )))
    });
    let expected = Capital {
        country: "x".into(),
        city: "Lima".into(),
    };
    let dataset = Dataset::new("typed")
        .case(Case::typed("peru", &json!({"country": "Peru"}), Some(&expected)).unwrap())
        .case(Case::typed("chile", &json!({"country": "Chile"}), Some(&expected)).unwrap());
    let report = Runner::new(agent_on(Arc::new(model)))
        .typed::<Capital>()
        .run(&dataset)
        .await
        .unwrap();
    assert!(
        report.case("peru").unwrap().passed(),
        "{}",
        report.to_json()
    );
    assert!(!report.case("chile").unwrap().passed());
    assert_eq!(
        report.case("peru").unwrap().attempts[0].run.output_json,
        Some(json!({"city": "Lima", "country": "x"}))
    );
}

#[tokio::test]
async fn datasets_from_yaml_and_json_files_run_the_same() {
    let yaml = r#"
name: files
evaluators:
  - type: tool_not_called
    tool: delete
budget:
  timeout_secs: 30
cases:
  - name: read
    input: 'call lookup {"key": "x"}'
    expected_output: "done: value of x"
    expected_tools:
      order: in_order
      calls:
        - tool: lookup
          args:
            key: {regex: "^x$"}
    tags: [smoke]
    metadata: {owner: tests}
  - name: remove
    input: 'call delete {"key": "x"}'
    approvals: {allow: [delete]}
"#;
    let dir = tempfile::tempdir().unwrap();
    let yaml_path = dir.path().join("d.yaml");
    std::fs::write(&yaml_path, yaml).unwrap();
    let from_yaml = Dataset::load(&yaml_path).unwrap();
    let json_path = dir.path().join("d.json");
    from_yaml.save(&json_path).unwrap();
    let from_json = Dataset::load(&json_path).unwrap();
    assert_eq!(from_yaml, from_json);
    assert_eq!(from_yaml.with_tag("smoke").cases.len(), 1);
    let runner = Runner::new(agent());
    let report = runner.run(&from_json).await.unwrap();
    assert!(report.case("read").unwrap().passed());
    let remove = report.case("remove").unwrap();
    assert!(!remove.passed());
    assert!(
        remove
            .first_problem()
            .unwrap()
            .contains("never calls delete")
    );
    // The CI gate: passes on the passing subset, fails with the table otherwise.
    assert_dataset(&runner, &from_json.with_tag("smoke")).await;
    let table = check_dataset(&runner, &from_json).await.unwrap_err();
    assert!(table.contains("FAIL  remove"), "{table}");
}

#[tokio::test]
#[should_panic(expected = "FAIL  wrong")]
async fn assert_dataset_panics_with_the_table() {
    let dataset = Dataset::new("gate").case(Case::new("wrong", "say 5").expect_output("4"));
    assert_dataset(&Runner::new(agent()), &dataset).await;
}

#[tokio::test]
async fn settings_errors_come_before_any_attempt() {
    let model = ScriptedClient::new();
    let runner = Runner::new(agent_on(Arc::new(model.clone())));
    let bad = Dataset::new("bad").case(Case::new("a", "x").evaluator(EvaluatorSpec::Regex {
        pattern: "[".into(),
    }));
    assert!(
        runner
            .run(&bad)
            .await
            .is_err_and(|e| e.to_string().contains("case a"))
    );
    let judged = Dataset::new("judged").case(Case::new("a", "x").evaluator(EvaluatorSpec::Judge {
        rubric: "r".into(),
        threshold: 0.5,
    }));
    assert!(matches!(
        runner.run(&judged).await,
        Err(mux_eval::EvalError::NoJudge { .. })
    ));
    assert!(model.requests().is_empty());
    // A target that cannot make the agent fails the attempt, not the run.
    let broken = Runner::new(target::from_fn(|_| Err("no key".to_owned())));
    let report = broken
        .run(&Dataset::new("t").case(Case::new("a", "x")))
        .await
        .unwrap();
    let failure = report.cases[0].attempts[0].run.failure.clone().unwrap();
    assert_eq!(
        (failure.kind.as_str(), failure.message.as_str()),
        ("target", "no key")
    );
}

#[tokio::test]
async fn a_panicking_custom_evaluator_fails_its_verdict_not_the_run() {
    let grumpy = mux_eval::evaluator::from_fn("grumpy", |cx: &mux_eval::EvalContext<'_>| {
        assert!(cx.run.output != "boom", "cannot stand {}", cx.run.output);
        mux_eval::Score::pass()
    });
    let dataset = Dataset::new("panics")
        .case(Case::new("calm", "say fine"))
        .case(Case::new("loud", "say boom"));
    let report = Runner::new(agent())
        .evaluator(grumpy)
        .run(&dataset)
        .await
        .unwrap();
    assert!(report.case("calm").unwrap().passed());
    let loud = &report.case("loud").unwrap().attempts[0].verdicts[0];
    assert!(!loud.score.passed);
    assert!(
        loud.error
            .as_deref()
            .is_some_and(|e| e.contains("panicked: cannot stand boom")),
        "{loud:?}"
    );
}
