//! The LLM judge through a scripted model and through the OpenAI-compatible provider against
//! a local server; a malformed verdict fails the attempt with a typed reason.

use std::sync::Arc;

use mux_eval::{Case, Dataset, EvaluatorSpec, JudgeModel, Runner};
use mux_llm::Response;
use mux_llm::http::HttpOptions;
use mux_llm::openai::{OpenAiClient, Preset};
use mux_llm::testing::{ReplayServer, Reply, ScriptedClient};

use crate::support::agent;

fn judged(name: &str, prompt: &str) -> Case {
    Case::new(name, prompt).evaluator(EvaluatorSpec::Judge {
        rubric: "The answer names the value it looked up.".into(),
        threshold: 0.5,
    })
}

#[tokio::test]
async fn a_scripted_judge_scores_and_a_malformed_verdict_is_a_typed_failure() {
    let judge = ScriptedClient::new().respond_with(|request| {
        let asked = request.messages[0]
            .content
            .iter()
            .find_map(|b| b.as_text())
            .unwrap_or("");
        Ok(Response::from_text(if asked.contains("value of good") {
            "```json\n{\"score\": 0.9, \"pass\": true, \"reasons\": [\"names the value\"]}\n```"
        } else if asked.contains("value of bad") {
            "{\"score\": 0.2, \"reasons\": \"names nothing\"}"
        } else {
            "Looks great to me!"
        }))
    });
    let dataset = Dataset::new("judged")
        .case(judged("good", r#"call lookup {"key": "good"}"#))
        .case(judged("bad", r#"call lookup {"key": "bad"}"#))
        .case(judged("garbled", r#"call lookup {"key": "other"}"#));
    let report = Runner::new(agent())
        .judge(JudgeModel::new(Arc::new(judge.clone()), "judge-model"))
        .run(&dataset)
        .await
        .unwrap();
    let verdict = |name: &str| report.case(name).unwrap().attempts[0].verdicts[0].clone();
    let good = verdict("good");
    assert!(good.score.passed && (good.score.value - 0.9).abs() < 1e-9);
    assert_eq!(good.score.reasons, ["names the value"]);
    let bad = verdict("bad");
    assert!(!bad.score.passed && bad.error.is_none());
    let garbled = verdict("garbled");
    assert!(!garbled.score.passed);
    assert!(
        garbled
            .error
            .as_deref()
            .is_some_and(|e| e.contains("no JSON object")),
        "{garbled:?}"
    );
    // The judge saw the rubric, the task and the answer between markers.
    let seen = judge.requests();
    assert_eq!(seen.len(), 3);
    let text = seen[0].messages[0]
        .content
        .iter()
        .find_map(|b| b.as_text())
        .unwrap();
    assert!(
        text.contains("names the value it looked up") && text.contains("<<<ANSWER\ndone: value of")
    );
    assert_eq!(seen[0].model, "judge-model");
}

#[tokio::test]
async fn a_judge_on_the_openai_compatible_provider() {
    let body = r#"{"id":"x","object":"chat.completion","model":"judge","choices":[{"index":0,
        "message":{"role":"assistant","content":"{\"score\": 1, \"reasons\": [\"exact\"]}"},
        "finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}"#;
    let server = ReplayServer::start(vec![Reply::json(200, body)])
        .await
        .unwrap();
    let mut options = HttpOptions::new(format!("{}/v1", server.url()), None);
    options.retry.max_retries = 0;
    let client = OpenAiClient::with_options(Preset::Vllm, options).unwrap();
    let report = Runner::new(agent())
        .judge(JudgeModel::new(Arc::new(client), "judge"))
        .run(&Dataset::new("j").case(judged("one", "say 42")))
        .await
        .unwrap();
    assert!(report.passed(), "{}", report.to_json());
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert!(
        requests[0].json()["messages"]
            .to_string()
            .contains("<<<ANSWER\\n42\\nANSWER>>>")
    );
}
