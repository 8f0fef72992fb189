//! A case: an input for the agent, what is expected of the run, and how the run is driven
//! (approvals, budget).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::expect::Trajectory;
use crate::spec::EvaluatorSpec;

/// What the agent is given: one prompt, or a conversation of user messages sent one after
/// the other on the same session (each a run; the last run's answer is the output).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Input {
    /// One prompt.
    Prompt(String),
    /// User messages, in order.
    Conversation(Vec<String>),
}

impl Input {
    /// The user messages, in order.
    pub fn messages(&self) -> Vec<&str> {
        match self {
            Self::Prompt(prompt) => vec![prompt.as_str()],
            Self::Conversation(messages) => messages.iter().map(String::as_str).collect(),
        }
    }

    /// The input as one text (messages on their own lines), for reports and judges.
    pub fn text(&self) -> String {
        self.messages().join("\n")
    }
}

impl From<&str> for Input {
    fn from(prompt: &str) -> Self {
        Self::Prompt(prompt.to_owned())
    }
}

impl From<String> for Input {
    fn from(prompt: String) -> Self {
        Self::Prompt(prompt)
    }
}

/// How a case's approval questions are answered (the runner is the face): tools in `allow`
/// are allowed once, tools in `deny` denied, any other by `default` (deny unless set).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approvals {
    /// Tools whose calls are allowed.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Tools whose calls are denied.
    #[serde(default)]
    pub deny: Vec<String>,
    /// The answer for any other tool: `true` allows.
    #[serde(default)]
    pub allow_others: bool,
}

impl Approvals {
    /// Allows every call.
    pub fn allow_all() -> Self {
        Self {
            allow_others: true,
            ..Self::default()
        }
    }

    /// Whether a call of `tool` is allowed (deny wins over allow).
    pub fn allows(&self, tool: &str) -> bool {
        if self.deny.iter().any(|t| t == tool) {
            return false;
        }
        self.allow.iter().any(|t| t == tool) || self.allow_others
    }
}

/// What one attempt of a case may spend before the runner stops it (the case then fails with
/// the bound it crossed). Every bound is off when unset.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseBudget {
    /// Wall-clock time of the attempt, in seconds.
    #[serde(default)]
    pub timeout_secs: Option<f64>,
    /// Model calls.
    #[serde(default)]
    pub max_model_calls: Option<u32>,
    /// Tool calls.
    #[serde(default)]
    pub max_tool_calls: Option<u32>,
    /// Input plus output tokens.
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

impl CaseBudget {
    /// The timeout, when set and valid (a negative or non-finite value is none).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_secs
            .filter(|secs| secs.is_finite() && *secs >= 0.0)
            .map(Duration::from_secs_f64)
    }

    /// This budget with `other`'s bounds where this one has none.
    pub fn or(&self, other: &CaseBudget) -> CaseBudget {
        CaseBudget {
            timeout_secs: self.timeout_secs.or(other.timeout_secs),
            max_model_calls: self.max_model_calls.or(other.max_model_calls),
            max_tool_calls: self.max_tool_calls.or(other.max_tool_calls),
            max_tokens: self.max_tokens.or(other.max_tokens),
        }
    }
}

/// One case of a dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// A name unique in its dataset (also the cassette's file name).
    pub name: String,
    /// What the agent is given.
    pub input: Input,
    /// The expected output: a string is compared with the answer's text, any other value with
    /// the answer read as JSON (an `equals` evaluator is added for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_output: Option<Value>,
    /// The expected tool calls (a `trajectory` evaluator is added for them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_tools: Option<Trajectory>,
    /// Anything the application wants to keep with the case.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Value>,
    /// Tags, to select and group cases.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// This case's own evaluators, beside the dataset's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evaluators: Vec<EvaluatorSpec>,
    /// How approval questions are answered.
    #[serde(default)]
    pub approvals: Approvals,
    /// What an attempt may spend (the dataset's budget fills what is unset).
    #[serde(default)]
    pub budget: CaseBudget,
}

impl Case {
    /// A case named `name` with `input` and nothing expected yet.
    pub fn new(name: impl Into<String>, input: impl Into<Input>) -> Self {
        Self {
            name: name.into(),
            input: input.into(),
            expected_output: None,
            expected_tools: None,
            metadata: BTreeMap::new(),
            tags: Vec::new(),
            evaluators: Vec::new(),
            approvals: Approvals::default(),
            budget: CaseBudget::default(),
        }
    }

    /// A case whose input is `input` serialized as JSON and whose expected output is
    /// `expected` as JSON: for agents answering with structured output
    /// ([`Runner::typed`](crate::Runner::typed)).
    pub fn typed<I: Serialize, O: Serialize>(
        name: impl Into<String>,
        input: &I,
        expected: Option<&O>,
    ) -> Result<Self, serde_json::Error> {
        let mut case = Self::new(name, serde_json::to_string(input)?);
        case.expected_output = expected.map(serde_json::to_value).transpose()?;
        Ok(case)
    }

    /// Sets the expected output.
    pub fn expect_output(mut self, output: impl Into<Value>) -> Self {
        self.expected_output = Some(output.into());
        self
    }

    /// Sets the expected tool calls.
    pub fn expect_tools(mut self, trajectory: Trajectory) -> Self {
        self.expected_tools = Some(trajectory);
        self
    }

    /// Adds a tag.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Sets a metadata entry.
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Adds an evaluator of this case.
    pub fn evaluator(mut self, spec: EvaluatorSpec) -> Self {
        self.evaluators.push(spec);
        self
    }

    /// Sets how approvals are answered.
    pub fn approvals(mut self, approvals: Approvals) -> Self {
        self.approvals = approvals;
        self
    }

    /// Sets the budget of each attempt.
    pub fn budget(mut self, budget: CaseBudget) -> Self {
        self.budget = budget;
        self
    }
}
