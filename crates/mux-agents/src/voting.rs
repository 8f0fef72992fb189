//! Voting: N agents answer the same question in parallel; an aggregator picks the answer
//! (majority over normalized answers, first-k agreement, or a judge agent). Stragglers are
//! cancelled as soon as the outcome is decided.
//!
//! A vote is traced as one `invoke_workflow {name}` span (GenAI conventions) with every
//! voter's and the judge's `invoke_agent` run under it.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::task::JoinSet;
use tracing::{Instrument, Span};

use mux_tool::Registry;

use crate::workflow;
use crate::{AgentDefinition, AgentError, AgentHandle, AgentId, AgentRuntime};

/// How the answers are aggregated.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Aggregator {
    /// The most frequent normalized answer; a shared top count is a tie (no winner).
    /// Decided early once no pending ballot could change the leader.
    Majority,
    /// The first normalized answer given by this many voters; decided as soon as one is.
    FirstK(usize),
    /// A judge agent reads every distinct answer and picks one by its number.
    Judge(Box<AgentDefinition>),
}

/// Why a vote failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VotingError {
    /// No voters were given.
    #[error("a vote needs at least one voter")]
    NoVoters,
    /// `FirstK(0)`, or a k larger than the number of voters.
    #[error("first-k agreement needs 1 <= k <= {voters}, got k = {k}")]
    InvalidK {
        /// The k asked for.
        k: usize,
        /// The number of voters.
        voters: usize,
    },
    /// Every voter failed.
    #[error("no voter answered ({} failed)", .0.len())]
    NoBallots(Vec<(String, String)>),
    /// The judge's reply named no valid candidate.
    #[error("the judge named no candidate between 1 and {candidates}; it said: {reply}")]
    JudgeUnclear {
        /// What the judge said.
        reply: String,
        /// How many candidates there were.
        candidates: usize,
    },
    /// An agent failed.
    #[error(transparent)]
    Agent(#[from] AgentError),
}

impl VotingError {
    /// A short name of the failure, for traces (`error.type`).
    pub fn kind(&self) -> &'static str {
        match self {
            VotingError::NoVoters => "no_voters",
            VotingError::InvalidK { .. } => "invalid_k",
            VotingError::NoBallots(_) => "no_ballots",
            VotingError::JudgeUnclear { .. } => "judge_unclear",
            VotingError::Agent(_) => "agent",
        }
    }
}

/// One voter's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ballot {
    /// The voter's definition name.
    pub voter: String,
    /// Its agent id.
    pub agent: AgentId,
    /// Its answer as given.
    pub answer: String,
    /// The answer as compared ([`normalize`]).
    pub normalized: String,
}

/// What a vote produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VoteOutcome {
    /// The winning answer as first given, if there is one.
    pub winner: Option<String>,
    /// Whether the top count was shared (majority) so no winner was picked.
    pub tie: bool,
    /// Votes per normalized answer, most first (then alphabetical).
    pub tally: Vec<(String, usize)>,
    /// Every ballot, in the order they arrived.
    pub ballots: Vec<Ballot>,
    /// The ballots that disagree with the winner (all of them when there is none).
    pub dissent: Vec<Ballot>,
    /// Voters cancelled because the outcome was decided before they answered.
    pub cancelled: Vec<String>,
    /// Voters that failed, with why.
    pub failed: Vec<(String, String)>,
}

/// Lowercases, trims, collapses whitespace and drops trailing punctuation, so that
/// `" Paris. "` and `"paris"` count as one answer.
pub fn normalize(answer: &str) -> String {
    let words: Vec<&str> = answer.split_whitespace().collect();
    words
        .join(" ")
        .to_lowercase()
        .trim_end_matches(['.', '!', '?', ',', ';', ':'])
        .trim()
        .to_owned()
}

/// A vote among agents.
///
/// ```
/// use mux_agents::{AgentDefinition, AgentRuntime, Voting};
/// use mux_llm::testing::ScriptedClient;
/// use mux_orchestrator::Agent;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let client = ScriptedClient::new().reply_text("42").reply_text("42.").reply_text("41");
/// let runtime = AgentRuntime::builder(Agent::builder(client, "model").build().unwrap()).build();
/// let outcome = Voting::same(AgentDefinition::new("solver"), 3).run(&runtime, "6 x 7?").await?;
/// assert_eq!(outcome.tally[0], ("42".to_string(), 2));
/// assert!(outcome.winner.is_some());
/// # Ok::<(), mux_agents::VotingError>(()) }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Voting {
    voters: Vec<AgentDefinition>,
    aggregator: Aggregator,
    timeout: Duration,
    parent: Option<AgentHandle>,
    name: String,
}

impl Voting {
    /// A majority vote among these voters (same or different models and prompts), with a
    /// 10-minute limit per answer.
    pub fn new(voters: impl IntoIterator<Item = AgentDefinition>) -> Self {
        Self {
            voters: voters.into_iter().collect(),
            aggregator: Aggregator::Majority,
            timeout: Duration::from_secs(600),
            parent: None,
            name: "voting".to_owned(),
        }
    }

    /// Names the vote in traces (`invoke_workflow {name}`, `gen_ai.workflow.name`; default
    /// `voting`). Keep it low-cardinality: a fixed name per kind of vote, never a question.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// A majority vote among `n` copies of `definition`.
    pub fn same(definition: AgentDefinition, n: usize) -> Self {
        Self::new(std::iter::repeat_n(definition, n))
    }

    /// Sets the aggregator.
    pub fn aggregator(mut self, aggregator: Aggregator) -> Self {
        self.aggregator = aggregator;
        self
    }

    /// Runs the voters (and the judge) as subagents of `parent`: linked to it, using its tools,
    /// and cancelled with it.
    pub fn parent(mut self, parent: &AgentHandle) -> Self {
        self.parent = Some(parent.clone());
        self
    }

    /// The limit on each voter's (and the judge's) answer.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Asks every voter `question` and aggregates the answers. Every voter agent is shut down
    /// before this returns.
    pub async fn run(
        &self,
        runtime: &AgentRuntime,
        question: &str,
    ) -> Result<VoteOutcome, VotingError> {
        let span = workflow::workflow_span("voting", &self.name);
        let result = self
            .run_in(runtime, question, &span)
            .instrument(span.clone())
            .await;
        if let Err(err) = &result {
            workflow::record_error(&span, err.kind());
        }
        result
    }

    async fn run_in(
        &self,
        runtime: &AgentRuntime,
        question: &str,
        span: &Span,
    ) -> Result<VoteOutcome, VotingError> {
        if self.voters.is_empty() {
            return Err(VotingError::NoVoters);
        }
        if let Aggregator::FirstK(k) = self.aggregator
            && (k == 0 || k > self.voters.len())
        {
            return Err(VotingError::InvalidK {
                k,
                voters: self.voters.len(),
            });
        }
        let mut agents: Vec<AgentHandle> = Vec::new();
        for voter in &self.voters {
            match runtime
                .spawn_under(self.parent.as_ref(), voter.clone(), Registry::new())
                .await
            {
                Ok(agent) => agents.push(agent),
                Err(err) => {
                    shutdown(&agents).await;
                    return Err(err.into());
                }
            }
        }
        let outcome = self.collect(&agents, question, span).await;
        shutdown(&agents).await;
        let mut outcome = outcome?;
        if let Aggregator::Judge(judge) = &self.aggregator {
            self.judge(runtime, (**judge).clone(), question, &mut outcome, span)
                .await?;
        }
        Ok(outcome)
    }

    /// Runs the voters until the outcome is decided; cancels the rest.
    async fn collect(
        &self,
        agents: &[AgentHandle],
        question: &str,
        span: &Span,
    ) -> Result<VoteOutcome, VotingError> {
        let mut pending = JoinSet::new();
        for (index, agent) in agents.iter().enumerate() {
            let mut run = agent.prompt_under(question, workflow::under(span))?;
            let timeout = self.timeout;
            pending.spawn(async move { (index, run.wait_timeout(timeout).await) });
        }
        let mut ballots = Vec::new();
        let mut failed = Vec::new();
        let mut answered = vec![false; agents.len()];
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        while let Some(joined) = pending.join_next().await {
            let (index, result) = joined.map_err(|err| AgentError::Crashed(err.to_string()))?;
            answered[index] = true;
            let agent = &agents[index];
            match result {
                Ok(summary) => {
                    let normalized = normalize(&summary.text);
                    *counts.entry(normalized.clone()).or_default() += 1;
                    ballots.push(Ballot {
                        voter: agent.name().to_owned(),
                        agent: agent.id().clone(),
                        answer: summary.text,
                        normalized,
                    });
                }
                Err(err) => failed.push((agent.name().to_owned(), err.to_string())),
            }
            if self.decided(&counts, pending.len()) {
                break;
            }
        }
        let cancelled: Vec<String> = agents
            .iter()
            .zip(&answered)
            .filter(|(_, done)| !**done)
            .map(|(agent, _)| {
                agent.shutdown();
                agent.name().to_owned()
            })
            .collect();
        pending.abort_all();
        if ballots.is_empty() {
            return Err(VotingError::NoBallots(failed));
        }
        Ok(self.outcome(ballots, counts, cancelled, failed))
    }

    fn decided(&self, counts: &BTreeMap<String, usize>, remaining: usize) -> bool {
        let mut sorted: Vec<usize> = counts.values().copied().collect();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let first = sorted.first().copied().unwrap_or(0);
        let second = sorted.get(1).copied().unwrap_or(0);
        match self.aggregator {
            Aggregator::Majority => first > second + remaining,
            Aggregator::FirstK(k) => first >= k,
            Aggregator::Judge(_) => false,
        }
    }

    fn outcome(
        &self,
        ballots: Vec<Ballot>,
        counts: BTreeMap<String, usize>,
        cancelled: Vec<String>,
        failed: Vec<(String, String)>,
    ) -> VoteOutcome {
        let mut tally: Vec<(String, usize)> = counts.into_iter().collect();
        tally.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let top = tally.first().map_or(0, |t| t.1);
        let tie = tally.iter().filter(|t| t.1 == top).count() > 1;
        let winning = match self.aggregator {
            Aggregator::Majority if !tie => tally.first().map(|t| t.0.clone()),
            Aggregator::FirstK(k) if top >= k && !tie => tally.first().map(|t| t.0.clone()),
            _ => None,
        };
        let mut outcome = VoteOutcome {
            winner: None,
            tie: tie && !matches!(self.aggregator, Aggregator::Judge(_)),
            tally,
            ballots,
            dissent: Vec::new(),
            cancelled,
            failed,
        };
        set_winner(&mut outcome, winning);
        outcome
    }

    /// Asks `judge` to pick among the distinct answers.
    async fn judge(
        &self,
        runtime: &AgentRuntime,
        judge: AgentDefinition,
        question: &str,
        outcome: &mut VoteOutcome,
        span: &Span,
    ) -> Result<(), VotingError> {
        let candidates: Vec<String> = outcome
            .tally
            .iter()
            .filter_map(|(normalized, _)| {
                outcome
                    .ballots
                    .iter()
                    .find(|b| &b.normalized == normalized)
                    .map(|b| b.answer.clone())
            })
            .collect();
        let mut prompt = format!("Question: {question}\n\nCandidate answers:\n");
        for (i, candidate) in candidates.iter().enumerate() {
            prompt.push_str(&format!("{}. {candidate}\n", i + 1));
        }
        prompt.push_str("\nReply with the number of the best answer only.");
        let agent = runtime
            .spawn_under(self.parent.as_ref(), judge, Registry::new())
            .await?;
        let reply = async {
            let mut run = agent.prompt_under(prompt, workflow::under(span))?;
            run.wait_timeout(self.timeout).await
        }
        .await;
        agent.shutdown();
        agent.wait().await;
        let reply = reply?.text;
        let pick = reply
            .split(|c: char| !c.is_ascii_digit())
            .find(|s| !s.is_empty())
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|n| (1..=candidates.len()).contains(n));
        let Some(pick) = pick else {
            return Err(VotingError::JudgeUnclear {
                reply,
                candidates: candidates.len(),
            });
        };
        let winning = outcome.tally.get(pick - 1).map(|t| t.0.clone());
        set_winner(outcome, winning);
        Ok(())
    }
}

/// Sets the winner (as first given) and the dissent from the winning normalized answer.
fn set_winner(outcome: &mut VoteOutcome, winning: Option<String>) {
    outcome.winner = winning.as_ref().and_then(|w| {
        outcome
            .ballots
            .iter()
            .find(|b| &b.normalized == w)
            .map(|b| b.answer.clone())
    });
    outcome.dissent = outcome
        .ballots
        .iter()
        .filter(|b| Some(&b.normalized) != winning.as_ref())
        .cloned()
        .collect();
}

async fn shutdown(agents: &[AgentHandle]) {
    for agent in agents {
        agent.shutdown();
    }
    for agent in agents {
        agent.wait().await;
    }
}
