//! Expected tool trajectories: which calls, in what order, with which arguments.

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// How the calls of a [`Trajectory`] must appear among the calls the agent made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Exactly these calls, in this order, and no others.
    Exact,
    /// These calls in this order, other calls allowed between them.
    #[default]
    InOrder,
    /// These calls in any order, other calls allowed.
    AnyOrder,
}

/// The tool calls a case expects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trajectory {
    /// How the calls must appear.
    #[serde(default)]
    pub order: Order,
    /// The expected calls.
    pub calls: Vec<ExpectedCall>,
}

impl Trajectory {
    /// Expects `calls` in `order`.
    pub fn new(order: Order, calls: impl IntoIterator<Item = ExpectedCall>) -> Self {
        Self {
            order,
            calls: calls.into_iter().collect(),
        }
    }
}

/// One expected call: the tool's name and matchers for some of its arguments (arguments not
/// named are not checked).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedCall {
    /// The tool's name.
    pub tool: String,
    /// Matchers by argument name; a plain value must be equal.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub args: BTreeMap<String, ArgMatcher>,
}

impl ExpectedCall {
    /// A call of `tool`, whatever its arguments.
    pub fn tool(tool: impl Into<String>) -> Self {
        Self {
            tool: tool.into(),
            args: BTreeMap::new(),
        }
    }

    /// Also checks argument `name` with `matcher`.
    pub fn arg(mut self, name: impl Into<String>, matcher: ArgMatcher) -> Self {
        self.args.insert(name.into(), matcher);
        self
    }

    /// Whether `name` and `input` satisfy this expectation; on a miss, why.
    pub fn check(&self, name: &str, input: &Value) -> Result<(), String> {
        if name != self.tool {
            return Err(format!("tool {name}, expected {}", self.tool));
        }
        for (arg, matcher) in &self.args {
            let actual = input.get(arg);
            if !matcher.matches(actual) {
                let shown = actual.map_or_else(|| "missing".to_owned(), Value::to_string);
                return Err(format!(
                    "{}: argument {arg} is {shown}, expected {}",
                    self.tool,
                    matcher.describe()
                ));
            }
        }
        Ok(())
    }
}

/// How one argument must look. In a file a plain value means `equals`; an object with one
/// key `equals`, `contains`, `regex` or `present` is that matcher.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ArgMatcher {
    /// The same JSON value.
    Equals(Value),
    /// A string containing this text.
    Contains(String),
    /// A string matching this regular expression (searched, not anchored).
    Regex(regex::Regex),
    /// Present (`true`) or absent (`false`).
    Present(bool),
}

impl PartialEq for ArgMatcher {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Equals(a), Self::Equals(b)) => a == b,
            (Self::Contains(a), Self::Contains(b)) => a == b,
            (Self::Regex(a), Self::Regex(b)) => a.as_str() == b.as_str(),
            (Self::Present(a), Self::Present(b)) => a == b,
            _ => false,
        }
    }
}

/// The largest compiled regex a dataset may ask for (bytes), so a hostile pattern cannot take
/// the memory.
pub(crate) const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Compiles `pattern` within [`REGEX_SIZE_LIMIT`].
pub(crate) fn compile_regex(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|err| format!("regex {pattern:?}: {err}"))
}

impl ArgMatcher {
    /// Equal to `value`.
    pub fn equals(value: impl Into<Value>) -> Self {
        Self::Equals(value.into())
    }

    /// A string containing `text`.
    pub fn contains(text: impl Into<String>) -> Self {
        Self::Contains(text.into())
    }

    /// A string matching `pattern`; a pattern that does not compile is an error naming it.
    pub fn regex(pattern: &str) -> Result<Self, String> {
        compile_regex(pattern).map(Self::Regex)
    }

    /// Whether `actual` (the argument, if present) matches.
    pub fn matches(&self, actual: Option<&Value>) -> bool {
        match self {
            Self::Equals(want) => actual == Some(want),
            Self::Contains(text) => actual
                .and_then(Value::as_str)
                .is_some_and(|s| s.contains(text.as_str())),
            Self::Regex(re) => actual
                .and_then(Value::as_str)
                .is_some_and(|s| re.is_match(s)),
            Self::Present(want) => actual.is_some() == *want,
        }
    }

    /// The matcher in words, for reasons.
    pub fn describe(&self) -> String {
        match self {
            Self::Equals(value) => value.to_string(),
            Self::Contains(text) => format!("a string containing {text:?}"),
            Self::Regex(re) => format!("a string matching /{}/", re.as_str()),
            Self::Present(true) => "present".to_owned(),
            Self::Present(false) => "absent".to_owned(),
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Self::Equals(value) => serde_json::json!({ "equals": value }),
            Self::Contains(text) => serde_json::json!({ "contains": text }),
            Self::Regex(re) => serde_json::json!({ "regex": re.as_str() }),
            Self::Present(present) => serde_json::json!({ "present": present }),
        }
    }

    fn from_value(value: Value) -> Result<Self, String> {
        let Value::Object(map) = &value else {
            return Ok(Self::Equals(value));
        };
        if map.len() != 1 {
            return Ok(Self::Equals(value));
        }
        let Some((key, inner)) = map.iter().next() else {
            return Ok(Self::Equals(value));
        };
        match key.as_str() {
            "equals" => Ok(Self::Equals(inner.clone())),
            "contains" => inner
                .as_str()
                .map(|s| Self::Contains(s.to_owned()))
                .ok_or_else(|| "`contains` takes a string".to_owned()),
            "regex" => match inner.as_str() {
                Some(pattern) => Self::regex(pattern),
                None => Err("`regex` takes a string".to_owned()),
            },
            "present" => inner
                .as_bool()
                .map(Self::Present)
                .ok_or_else(|| "`present` takes true or false".to_owned()),
            _ => Ok(Self::Equals(value)),
        }
    }
}

impl Serialize for ArgMatcher {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ArgMatcher {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_value(value).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_values_are_equals_and_keyed_objects_are_matchers() -> Result<(), serde_json::Error> {
        let call: ExpectedCall = serde_json::from_value(json!({
            "tool": "read_file",
            "args": {"path": "a.txt", "limit": {"present": false}, "q": {"regex": "^a+$"},
                     "o": {"x": 1, "y": 2}}
        }))?;
        assert_eq!(call.args["path"], ArgMatcher::equals("a.txt"));
        assert!(
            call.check(
                "read_file",
                &json!({"path": "a.txt", "q": "aaa", "o": {"x": 1, "y": 2}})
            )
            .is_ok()
        );
        let miss = call.check(
            "read_file",
            &json!({"path": "a.txt", "q": "ab", "o": {"x": 1, "y": 2}}),
        );
        assert!(miss.is_err_and(|why| why.contains("argument q")));
        assert!(call.check("write_file", &json!({})).is_err());
        Ok(())
    }

    #[test]
    fn a_bad_regex_is_an_error_naming_it() {
        let err = serde_json::from_value::<ArgMatcher>(json!({"regex": "(unclosed"}));
        assert!(err.is_err_and(|e| e.to_string().contains("(unclosed")));
    }
}
