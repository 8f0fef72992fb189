//! Evaluators of the answer: equality, substrings, regular expressions, JSON Schema and
//! numbers within a tolerance.

use serde_json::Value;

use crate::evaluator::{Check, EvalContext};
use crate::evaluators::clip;
use crate::expect::compile_regex;
use crate::score::Score;

/// The answer equals a value: a string is compared with the text (both trimmed), any other
/// value with the answer read as JSON.
#[derive(Clone, Debug)]
pub struct Equals {
    expected: Value,
}

impl Equals {
    /// Expects `expected`.
    pub fn new(expected: impl Into<Value>) -> Self {
        Self {
            expected: expected.into(),
        }
    }
}

impl Check for Equals {
    fn name(&self) -> String {
        "equals".into()
    }

    fn check(&self, cx: &EvalContext<'_>) -> Score {
        match &self.expected {
            Value::String(want) => {
                let got = cx.run.output.trim();
                Score::check(
                    got == want.trim(),
                    format!(
                        "output {:?}, expected {:?}",
                        clip(got, 200),
                        clip(want, 200)
                    ),
                )
            }
            want => match cx.run.json() {
                Some(got) => Score::check(
                    &got == want,
                    format!(
                        "output {}, expected {}",
                        clip(&got.to_string(), 200),
                        clip(&want.to_string(), 200)
                    ),
                ),
                None => Score::fail(format!(
                    "the output is not JSON: {:?}",
                    clip(&cx.run.output, 200)
                )),
            },
        }
    }
}

/// The answer contains a text.
#[derive(Clone, Debug)]
pub struct Contains {
    text: String,
    ignore_case: bool,
}

impl Contains {
    /// Expects `text` in the answer.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ignore_case: false,
        }
    }

    /// Compares without regard to case.
    pub fn ignore_case(mut self) -> Self {
        self.ignore_case = true;
        self
    }
}

impl Check for Contains {
    fn name(&self) -> String {
        format!("contains {:?}", clip(&self.text, 40))
    }

    fn check(&self, cx: &EvalContext<'_>) -> Score {
        let found = if self.ignore_case {
            cx.run
                .output
                .to_lowercase()
                .contains(&self.text.to_lowercase())
        } else {
            cx.run.output.contains(&self.text)
        };
        let verb = if found { "contains" } else { "lacks" };
        Score::check(
            found,
            format!("the output {verb} {:?}", clip(&self.text, 80)),
        )
    }
}

/// The answer matches a regular expression (searched, not anchored).
#[derive(Clone, Debug)]
pub struct Matches {
    regex: regex::Regex,
}

impl Matches {
    /// Expects a match of `pattern`; a pattern that does not compile (or is too large) is an
    /// error naming it.
    pub fn new(pattern: &str) -> Result<Self, String> {
        Ok(Self {
            regex: compile_regex(pattern)?,
        })
    }
}

impl Check for Matches {
    fn name(&self) -> String {
        format!("regex /{}/", clip(self.regex.as_str(), 40))
    }

    fn check(&self, cx: &EvalContext<'_>) -> Score {
        let found = self.regex.is_match(&cx.run.output);
        let verb = if found { "matches" } else { "does not match" };
        Score::check(
            found,
            format!("the output {verb} /{}/", self.regex.as_str()),
        )
    }
}

/// The answer, read as JSON, validates against a JSON Schema.
pub struct JsonSchema {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for JsonSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonSchema").finish_non_exhaustive()
    }
}

impl JsonSchema {
    /// Validates against `schema`; a schema that is not valid is an error saying why.
    pub fn new(schema: &Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(|validator| Self { validator })
            .map_err(|err| format!("the schema is not valid: {err}"))
    }
}

impl Check for JsonSchema {
    fn name(&self) -> String {
        "json_schema".into()
    }

    fn check(&self, cx: &EvalContext<'_>) -> Score {
        let Some(value) = cx.run.json() else {
            return Score::fail(format!(
                "the output is not JSON: {:?}",
                clip(&cx.run.output, 200)
            ));
        };
        let problems: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(5)
            .map(|err| format!("at {:?}: {err}", err.instance_path().to_string()))
            .collect();
        if problems.is_empty() {
            Score::pass().reason("the output validates")
        } else {
            let mut score = Score::new(0.0, false);
            score.reasons = problems;
            score
        }
    }
}

/// A number in the answer is within a tolerance of the expected one.
#[derive(Clone, Debug)]
pub struct Numeric {
    expected: f64,
    tolerance: f64,
    pointer: Option<String>,
}

impl Numeric {
    /// Expects `expected` ± `tolerance`, read from the text as a number.
    pub fn new(expected: f64, tolerance: f64) -> Self {
        Self {
            expected,
            tolerance: tolerance.abs(),
            pointer: None,
        }
    }

    /// Reads the number at `pointer` (a JSON pointer) of the answer read as JSON.
    pub fn at(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }

    fn actual(&self, cx: &EvalContext<'_>) -> Result<f64, String> {
        match &self.pointer {
            Some(pointer) => {
                let json = cx.run.json().ok_or_else(|| {
                    format!("the output is not JSON: {:?}", clip(&cx.run.output, 200))
                })?;
                let found = json
                    .pointer(pointer)
                    .ok_or_else(|| format!("nothing at {pointer:?} in the output"))?;
                match found {
                    Value::Number(n) => n.as_f64().ok_or_else(|| format!("{n} is not a number")),
                    Value::String(s) => parse_number(s),
                    other => Err(format!(
                        "{} at {pointer:?} is not a number",
                        clip(&other.to_string(), 80)
                    )),
                }
            }
            None => parse_number(&cx.run.output),
        }
    }
}

fn parse_number(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    trimmed
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
        .ok_or_else(|| format!("{:?} is not a number", clip(trimmed, 80)))
}

impl Check for Numeric {
    fn name(&self) -> String {
        format!("numeric {} ± {}", self.expected, self.tolerance)
    }

    fn check(&self, cx: &EvalContext<'_>) -> Score {
        match self.actual(cx) {
            Ok(actual) => {
                let diff = (actual - self.expected).abs();
                let ok = diff <= self.tolerance;
                Score::check(
                    ok,
                    format!(
                        "{actual} is {diff} from {}, tolerance {}",
                        self.expected, self.tolerance
                    ),
                )
            }
            Err(why) => Score::fail(why),
        }
    }
}
