//! Voting: majority with ties, early decision cancelling stragglers, first-k, a judge.

use crate::common;

use common::ByModel;
use mux_agents::{AgentDefinition, AgentRuntime, Aggregator, Voting, VotingError, normalize};
use mux_orchestrator::Agent;

fn voter(model: &str) -> AgentDefinition {
    AgentDefinition::new(format!("voter-{model}")).model(model)
}

fn runtime(answers: fn(&str) -> String) -> AgentRuntime {
    AgentRuntime::builder(
        Agent::builder(ByModel { answers }, "default")
            .build()
            .unwrap(),
    )
    .build()
}

fn capitals(model: &str) -> String {
    match model {
        "p1" => "Paris",
        "p2" => " paris. ",
        "l1" => "Lyon",
        "l2" => "LYON!",
        "judge" => "The best is number 2.",
        "confused" => "they are all fine",
        other => other,
    }
    .to_owned()
}

#[test]
fn normalization_ignores_case_spacing_and_trailing_punctuation() {
    assert_eq!(normalize("  The   Answer is 42. "), "the answer is 42");
    assert_eq!(normalize("Yes!"), "yes");
    assert_eq!(normalize("3.14"), "3.14");
}

#[tokio::test]
async fn a_tie_has_no_winner_and_everyone_dissents() {
    let runtime = runtime(capitals);
    let outcome = Voting::new(["p1", "l1", "p2", "l2"].map(voter))
        .run(&runtime, "Capital of France?")
        .await
        .unwrap();
    assert!(outcome.tie);
    assert_eq!(outcome.winner, None);
    assert_eq!(
        outcome.tally,
        vec![("lyon".to_string(), 2), ("paris".to_string(), 2)]
    );
    assert_eq!(outcome.dissent.len(), 4);
    assert!(outcome.cancelled.is_empty() && outcome.failed.is_empty());
    assert_eq!(runtime.count(), 0);
}

#[tokio::test]
async fn a_decided_majority_cancels_the_straggler() {
    let runtime = runtime(capitals);
    // Paris 3 of 4: once three have answered, the fourth cannot change the outcome.
    let outcome = Voting::new(["p1", "slow", "p2", "p1"].map(voter))
        .run(&runtime, "Capital of France?")
        .await
        .unwrap();
    assert_eq!(
        outcome.winner.as_deref().map(normalize),
        Some("paris".into())
    );
    assert!(!outcome.tie);
    assert_eq!(outcome.tally, vec![("paris".to_string(), 3)]);
    assert_eq!(outcome.cancelled, vec!["voter-slow"]);
    assert!(outcome.dissent.is_empty());
    assert_eq!(runtime.count(), 0, "the straggler was shut down");
}

#[tokio::test]
async fn first_k_agreement_stops_at_k() {
    let runtime = runtime(capitals);
    let outcome = Voting::new(["l1", "slow", "p1", "l2"].map(voter))
        .aggregator(Aggregator::FirstK(2))
        .run(&runtime, "q")
        .await
        .unwrap();
    assert_eq!(
        outcome.winner.as_deref().map(normalize),
        Some("lyon".into())
    );
    assert_eq!(outcome.cancelled, vec!["voter-slow"]);
    assert_eq!(outcome.dissent.len(), 1);
    assert_eq!(outcome.dissent[0].normalized, "paris");

    let err = Voting::new(["l1"].map(voter))
        .aggregator(Aggregator::FirstK(2))
        .run(&runtime, "q")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "first-k agreement needs 1 <= k <= 1, got k = 2"
    );
    assert!(matches!(
        Voting::new([]).run(&runtime, "q").await,
        Err(VotingError::NoVoters)
    ));
}

#[tokio::test]
async fn a_judge_can_overrule_the_majority() {
    let runtime = runtime(capitals);
    let outcome = Voting::new(["p1", "p2", "l1"].map(voter))
        .aggregator(Aggregator::Judge(Box::new(voter("judge"))))
        .run(&runtime, "q")
        .await
        .unwrap();
    // Candidates are listed by tally: 1. Paris (2 votes), 2. Lyon (1 vote).
    assert_eq!(outcome.winner.as_deref(), Some("Lyon"));
    assert_eq!(outcome.dissent.len(), 2);
    assert!(!outcome.tie);

    let err = Voting::new(["p1", "l1"].map(voter))
        .aggregator(Aggregator::Judge(Box::new(voter("confused"))))
        .run(&runtime, "q")
        .await
        .unwrap_err();
    assert!(
        matches!(&err, VotingError::JudgeUnclear { candidates: 2, reply } if reply == "they are all fine"),
        "{err}"
    );
    assert_eq!(runtime.count(), 0);
}

#[tokio::test]
async fn voters_under_a_parent_are_linked_and_cancelled_with_it() {
    let runtime = runtime(capitals);
    let parent = runtime
        .spawn(AgentDefinition::new("lead"), mux_agents::AgentSession::New)
        .await
        .unwrap();
    let voting = Voting::new(["slow", "slow", "slow"].map(voter)).parent(&parent);
    let vote = {
        let runtime = runtime.clone();
        tokio::spawn(async move { voting.run(&runtime, "q").await })
    };
    while runtime
        .list()
        .iter()
        .filter(|a| a.state() == mux_agents::AgentState::Running)
        .count()
        < 3
    {
        tokio::task::yield_now().await;
    }
    let links = &parent.orchestrator().session().extra[mux_agents::SUBAGENTS_KEY];
    assert_eq!(links.as_array().unwrap().len(), 3);
    assert!(
        runtime
            .list()
            .iter()
            .skip(1)
            .all(|a| a.parent() == Some(parent.id()))
    );

    parent.shutdown();
    let err = tokio::time::timeout(std::time::Duration::from_secs(10), vote)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    match err {
        VotingError::NoBallots(failed) => {
            assert_eq!(failed.len(), 3);
            assert!(failed.iter().all(|(_, why)| why == "the run was cancelled"));
        }
        other => panic!("{other}"),
    }
    runtime
        .wait_all(std::time::Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(runtime.count(), 0);
}
