//! Offline runs from cassettes: recorded once through the real OpenAI-compatible client
//! against a local server acting as the provider, replayed with that server gone; a changed
//! prompt fails its case with the cassette's diff, and a missing cassette names its file.

use std::sync::Arc;

use mux_eval::{Case, Cassettes, Dataset, Runner, target};
use mux_llm::http::HttpOptions;
use mux_llm::openai::{OpenAiClient, Preset};
use mux_llm::testing::{CassetteMode, ReplayServer, Reply};

use crate::support::agent_on;

fn answer(text: &str) -> Reply {
    let chunk = |delta: &str, finish: &str| {
        format!(
            r#"{{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#
        )
    };
    let text = serde_json::to_string(text).unwrap();
    Reply::sse(format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(
            &format!(r#"{{"role":"assistant","content":{text}}}"#),
            "null"
        ),
        chunk("{}", r#""stop""#)
    ))
}

fn runner(cassettes: Cassettes) -> Runner {
    Runner::new(target::from_fn(|env| {
        let url = env.model_url.ok_or("no cassette server")?;
        let mut options = HttpOptions::new(format!("{url}/v1"), None);
        options.retry.max_retries = 0;
        let client =
            OpenAiClient::with_options(Preset::Vllm, options).map_err(|e| e.to_string())?;
        Ok(agent_on(Arc::new(client)))
    }))
    .cassettes(cassettes)
    .concurrency(1)
}

fn dataset(peru_prompt: &str) -> Dataset {
    Dataset::new("capitals")
        .case(Case::new("peru", peru_prompt).expect_output("Lima"))
        .case(Case::new("chile", "Capital of Chile?").expect_output("Santiago"))
}

#[tokio::test]
async fn recorded_cases_replay_offline_and_a_changed_prompt_fails_with_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    {
        let provider = ReplayServer::start(vec![answer("Lima"), answer("Santiago")])
            .await
            .unwrap();
        let recording = Cassettes::new(dir.path(), provider.url()).mode(CassetteMode::Record);
        let recorded = runner(recording)
            .run(&dataset("Capital of Peru?"))
            .await
            .unwrap();
        assert!(recorded.passed(), "{}", recorded.to_json());
        assert_eq!(provider.requests().len(), 2);
    }
    // The provider is gone: only the files can answer.
    let replay = || Cassettes::new(dir.path(), "http://127.0.0.1:9").mode(CassetteMode::Replay);
    let replayed = runner(replay())
        .run(&dataset("Capital of Peru?"))
        .await
        .unwrap();
    assert!(replayed.passed(), "{}", mux_eval::table::render(&replayed));

    let changed = runner(replay())
        .run(&dataset("Capital of Peru, please?"))
        .await
        .unwrap();
    let peru = changed.case("peru").unwrap();
    let failure = peru.attempts[0].run.failure.clone().unwrap();
    assert_eq!(failure.kind, "cassette");
    assert!(
        failure.message.contains("-") && failure.message.contains("Capital of Peru, please?"),
        "{}",
        failure.message
    );
    assert!(changed.case("chile").unwrap().passed());

    // A case without a cassette names the file it looked for.
    let added = dataset("Capital of Peru?").case(Case::new("brazil/../x", "Capital of Brazil?"));
    let report = runner(replay()).run(&added).await.unwrap();
    let failure = report.case("brazil/../x").unwrap().attempts[0]
        .run
        .failure
        .clone()
        .unwrap();
    assert_eq!(failure.kind, "cassette");
    assert!(
        failure.message.contains("brazil____x.json"),
        "{}",
        failure.message
    );
}

#[tokio::test]
async fn recording_with_repeats_is_refused_before_any_call() {
    let dir = tempfile::tempdir().unwrap();
    let recording = Cassettes::new(dir.path(), "http://127.0.0.1:9").mode(CassetteMode::Record);
    let result = runner(recording).repeats(3).run(&dataset("x")).await;
    assert!(matches!(result, Err(mux_eval::EvalError::Settings(_))));
    // Names that would share a file are refused too.
    let clash = Dataset::new("c")
        .case(Case::new("a/b", "x"))
        .case(Case::new("a_b", "y"));
    let replay = Cassettes::new(dir.path(), "http://127.0.0.1:9").mode(CassetteMode::Replay);
    assert!(
        runner(replay)
            .run(&clash)
            .await
            .is_err_and(|e| e.to_string().contains("share a cassette"))
    );
}
