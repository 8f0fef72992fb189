//! Each evaluator against an attempt that passes it and one that fails it.

use mux_eval::build::build;
use mux_eval::evaluators::bounds::{Bounds, Price};
use mux_eval::{
    ApprovalAsked, ArgMatcher, Case, EvalContext, EvaluatorSpec, ExpectedCall, Failure, Order,
    RunRecord, Score, ToolCall, Trajectory, evaluator,
};
use mux_llm::Usage;
use serde_json::{Value, json};

fn call(name: &str, input: Value) -> ToolCall {
    ToolCall {
        id: format!("id-{name}"),
        name: name.into(),
        input,
        output: String::new(),
        is_error: false,
    }
}

fn run(output: &str) -> RunRecord {
    RunRecord {
        output: output.into(),
        ..RunRecord::default()
    }
}

async fn score(spec: EvaluatorSpec, run: &RunRecord) -> Score {
    let case = Case::new("c", "input");
    let evaluator = build(&spec, "c", None).unwrap();
    evaluator
        .evaluate(EvalContext { case: &case, run })
        .await
        .unwrap()
}

async fn passes(spec: EvaluatorSpec, run: &RunRecord) -> bool {
    let score = score(spec, run).await;
    assert_eq!(score.passed, score.value >= 1.0, "{score:?}");
    score.passed
}

#[tokio::test]
async fn equals_compares_text_trimmed_and_json_as_values() {
    let text = || EvaluatorSpec::Equals {
        value: json!("Lima"),
    };
    assert!(passes(text(), &run(" Lima\n")).await);
    assert!(!passes(text(), &run("lima")).await);
    let object = || EvaluatorSpec::Equals {
        value: json!({"city": "Lima", "country": "Peru"}),
    };
    assert!(
        passes(
            object(),
            &run("```json\n{\"country\": \"Peru\", \"city\": \"Lima\"}\n```")
        )
        .await
    );
    assert!(!passes(object(), &run("{\"city\": \"Lima\"}")).await);
    let missing = score(object(), &run("not json")).await;
    assert!(!missing.passed && missing.reasons[0].contains("not JSON"));
}

#[tokio::test]
async fn contains_and_regex() {
    let contains = |ignore_case| EvaluatorSpec::Contains {
        text: "README".into(),
        ignore_case,
    };
    assert!(passes(contains(false), &run("see README.md")).await);
    assert!(!passes(contains(false), &run("see readme.md")).await);
    assert!(passes(contains(true), &run("see readme.md")).await);
    let regex = || EvaluatorSpec::Regex {
        pattern: r"\b\d{3}-\d{4}\b".into(),
    };
    assert!(passes(regex(), &run("call 555-1234 now")).await);
    assert!(!passes(regex(), &run("call 5551234 now")).await);
    let bad = build(
        &EvaluatorSpec::Regex {
            pattern: "(".into(),
        },
        "c",
        None,
    );
    assert!(
        bad.is_err_and(|e| e.to_string().contains("regex") && e.to_string().contains("case c"))
    );
    // A pattern whose compiled program is huge is refused, not built.
    let huge = build(
        &EvaluatorSpec::Regex {
            pattern: r"\w{1000}{1000}".into(),
        },
        "c",
        None,
    );
    assert!(huge.is_err());
}

#[tokio::test]
async fn json_schema_validates_the_output() {
    let spec = || EvaluatorSpec::JsonSchema {
        schema: json!({"type": "object", "required": ["city"],
                       "properties": {"city": {"type": "string"}}}),
    };
    assert!(passes(spec(), &run("{\"city\": \"Lima\"}")).await);
    let wrong = score(spec(), &run("{\"city\": 7}")).await;
    assert!(
        !wrong.passed && wrong.reasons[0].contains("/city"),
        "{wrong:?}"
    );
    assert!(!passes(spec(), &run("Lima")).await);
    let invalid = build(
        &EvaluatorSpec::JsonSchema {
            schema: json!({"type": 12}),
        },
        "c",
        None,
    );
    assert!(invalid.is_err());
}

#[tokio::test]
async fn numeric_within_tolerance_in_text_or_at_a_pointer() {
    let text = || EvaluatorSpec::Numeric {
        expected: 12.5,
        tolerance: 0.01,
        pointer: None,
    };
    assert!(passes(text(), &run("12.505")).await);
    assert!(!passes(text(), &run("12.6")).await);
    assert!(!passes(text(), &run("pi")).await);
    assert!(!passes(text(), &run("NaN")).await);
    let at = || EvaluatorSpec::Numeric {
        expected: 42.0,
        tolerance: 0.0,
        pointer: Some("/answer/value".into()),
    };
    assert!(passes(at(), &run("{\"answer\": {\"value\": 42}}")).await);
    assert!(!passes(at(), &run("{\"answer\": {\"value\": 41}}")).await);
    assert!(!passes(at(), &run("{\"answer\": {}}")).await);
    let infinite = build(
        &EvaluatorSpec::Numeric {
            expected: f64::INFINITY,
            tolerance: 0.0,
            pointer: None,
        },
        "c",
        None,
    );
    assert!(infinite.is_err());
}

fn trajectory_run() -> RunRecord {
    RunRecord {
        tool_calls: vec![
            call("list_dir", json!({"path": "."})),
            call("read_file", json!({"path": "src/main.rs"})),
            call("read_file", json!({"path": "README.md"})),
            call(
                "edit_file",
                json!({"path": "src/main.rs", "old": "a", "new": "b"}),
            ),
        ],
        ..RunRecord::default()
    }
}

fn traj(order: Order, calls: Vec<ExpectedCall>) -> EvaluatorSpec {
    EvaluatorSpec::Trajectory(Trajectory::new(order, calls))
}

#[tokio::test]
async fn trajectory_in_exact_order() {
    let all = vec![
        ExpectedCall::tool("list_dir"),
        ExpectedCall::tool("read_file").arg("path", ArgMatcher::contains("main")),
        ExpectedCall::tool("read_file"),
        ExpectedCall::tool("edit_file"),
    ];
    assert!(passes(traj(Order::Exact, all.clone()), &trajectory_run()).await);
    let fewer = score(traj(Order::Exact, all[..3].to_vec()), &trajectory_run()).await;
    assert!(
        !fewer.passed
            && fewer
                .reasons
                .iter()
                .any(|r| r.contains("edit_file was not expected"))
    );
    let mut swapped = all.clone();
    swapped.swap(0, 1);
    assert!(!passes(traj(Order::Exact, swapped), &trajectory_run()).await);
}

#[tokio::test]
async fn trajectory_as_an_in_order_subset() {
    let subset = vec![
        ExpectedCall::tool("read_file").arg("path", ArgMatcher::equals("README.md")),
        ExpectedCall::tool("edit_file").arg("path", ArgMatcher::regex(r"\.rs$").unwrap()),
    ];
    assert!(passes(traj(Order::InOrder, subset.clone()), &trajectory_run()).await);
    let reversed: Vec<_> = subset.into_iter().rev().collect();
    let miss = score(traj(Order::InOrder, reversed), &trajectory_run()).await;
    assert!(!miss.passed);
    assert!((miss.value - 0.5).abs() < 1e-9, "{miss:?}");
}

#[tokio::test]
async fn trajectory_in_any_order_with_argument_matchers() {
    // The first expectation could take either read_file; the matching still finds a home
    // for the second one.
    let any = vec![
        ExpectedCall::tool("read_file").arg("path", ArgMatcher::Present(true)),
        ExpectedCall::tool("read_file").arg("path", ArgMatcher::equals("src/main.rs")),
        ExpectedCall::tool("list_dir"),
    ];
    assert!(passes(traj(Order::AnyOrder, any), &trajectory_run()).await);
    let absent = vec![
        ExpectedCall::tool("edit_file").arg("force", ArgMatcher::Present(true)),
        ExpectedCall::tool("bash"),
    ];
    let miss = score(traj(Order::AnyOrder, absent), &trajectory_run()).await;
    assert!(!miss.passed && miss.value == 0.0);
    assert!(miss.reasons.iter().any(|r| r.contains("bash")));
}

#[tokio::test]
async fn bounds_on_calls_tokens_latency_and_cost() {
    let record = RunRecord {
        model_calls: 3,
        duration_ms: 1200,
        usage: Usage {
            input_tokens: 1000,
            output_tokens: 200,
            ..Usage::default()
        },
        ..trajectory_run()
    };
    let within = Bounds::new()
        .model_calls(3)
        .tool_calls(4)
        .total_tokens(1200)
        .latency_ms(1200)
        .cost_usd(
            0.01,
            Price {
                input: 3.0,
                output: 15.0,
            },
        );
    assert!(passes(EvaluatorSpec::Bounds(within), &record).await);
    let over = Bounds::new().model_calls(2).tool_calls(4).cost_usd(
        0.001,
        Price {
            input: 3.0,
            output: 15.0,
        },
    );
    let score = score(EvaluatorSpec::Bounds(over), &record).await;
    assert!(
        !score.passed && (score.value - 1.0 / 3.0).abs() < 1e-9,
        "{score:?}"
    );
    assert!(
        score
            .reasons
            .iter()
            .any(|r| r.contains("model calls 3 over 2"))
    );
    let unpriced = Bounds {
        max_cost_usd: Some(1.0),
        ..Bounds::default()
    };
    assert!(build(&EvaluatorSpec::Bounds(unpriced), "c", None).is_err());
}

#[tokio::test]
async fn events_tool_never_called_approval_asked_no_error() {
    let mut record = trajectory_run();
    assert!(
        passes(
            EvaluatorSpec::ToolNotCalled {
                tool: "bash".into()
            },
            &record
        )
        .await
    );
    assert!(
        !passes(
            EvaluatorSpec::ToolNotCalled {
                tool: "read_file".into()
            },
            &record
        )
        .await
    );
    let asked = |tool: Option<&str>, asked| EvaluatorSpec::ApprovalAsked {
        tool: tool.map(str::to_owned),
        asked,
    };
    assert!(!passes(asked(None, true), &record).await);
    assert!(passes(asked(None, false), &record).await);
    record.approvals.push(ApprovalAsked {
        call_id: "x".into(),
        tool: "bash".into(),
        input: json!({"command": "rm -rf /"}),
        allowed: false,
    });
    assert!(passes(asked(Some("bash"), true), &record).await);
    assert!(!passes(asked(Some("edit_file"), true), &record).await);
    // A call refused at the approval still counts as called.
    assert!(
        !passes(
            EvaluatorSpec::ToolNotCalled {
                tool: "bash".into()
            },
            &record
        )
        .await
    );
    assert!(passes(EvaluatorSpec::NoError, &record).await);
    let failed = |tool: Option<&str>, failed| EvaluatorSpec::ToolFailed {
        tool: tool.map(str::to_owned),
        failed,
    };
    assert!(passes(failed(None, false), &record).await);
    assert!(!passes(failed(None, true), &record).await);
    record.tool_calls[1].is_error = true;
    assert!(passes(failed(Some("read_file"), true), &record).await);
    assert!(passes(failed(Some("list_dir"), false), &record).await);
    assert!(!passes(failed(None, false), &record).await);
    assert!(
        !passes(failed(Some("bash"), true), &record).await,
        "no call made"
    );
    record.failure = Some(Failure {
        kind: "timeout".into(),
        message: "slow".into(),
    });
    assert!(!passes(EvaluatorSpec::NoError, &record).await);
}

#[tokio::test]
async fn custom_evaluators_in_rust() {
    let short = evaluator::from_fn("short", |cx: &EvalContext<'_>| {
        Score::check(
            cx.run.output.len() <= 5,
            format!("{} chars", cx.run.output.len()),
        )
    });
    let case = Case::new("c", "x");
    let ok = run("tiny");
    let long = run("much too long");
    assert!(
        short
            .evaluate(EvalContext {
                case: &case,
                run: &ok
            })
            .await
            .unwrap()
            .passed
    );
    assert!(
        !short
            .evaluate(EvalContext {
                case: &case,
                run: &long
            })
            .await
            .unwrap()
            .passed
    );
}
