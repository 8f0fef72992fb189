//! Checking a call's arguments against the tool's input schema.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::utf8_cut::truncate_str;
use crate::{SpecError, ToolSpec};

/// The longest problem message kept; longer ones (which quote a huge argument) are cut.
const MAX_PROBLEM_LEN: usize = 300;

/// One thing wrong with a call's arguments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgumentProblem {
    /// JSON Pointer to the offending value (`""` is the arguments object itself).
    pub path: String,
    /// What is wrong, in the words of the schema validator.
    pub message: String,
}

impl fmt::Display for ArgumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "at `{}`: {}", self.path, self.message)
        }
    }
}

/// A compiled input schema.
pub(crate) struct ArgsValidator {
    validator: jsonschema::Validator,
    schema: Value,
}

/// Compiled schemas by their JSON text, while some registry holds them: a server that builds
/// a registry per conversation (a web thread, an editor session) compiles each schema once,
/// not once per conversation, and keeps one copy of it.
static COMPILED: LazyLock<Mutex<HashMap<String, Weak<ArgsValidator>>>> =
    LazyLock::new(Mutex::default);

impl ArgsValidator {
    /// The compiled input schema of `spec`, shared with every registry that holds the same
    /// schema.
    pub(crate) fn shared(spec: &ToolSpec) -> Result<Arc<Self>, SpecError> {
        let key = spec.input_schema.to_string();
        let mut compiled = COMPILED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(validator) = compiled.get(&key).and_then(Weak::upgrade) {
            return Ok(validator);
        }
        let validator = Arc::new(Self::compile(spec)?);
        compiled.retain(|_, held| held.strong_count() > 0);
        compiled.insert(key, Arc::downgrade(&validator));
        Ok(validator)
    }

    /// Compiles the spec's input schema. No remote `$ref` is ever fetched.
    pub(crate) fn compile(spec: &ToolSpec) -> Result<Self, SpecError> {
        jsonschema::validator_for(&spec.input_schema)
            .map(|validator| Self {
                validator,
                schema: spec.input_schema.clone(),
            })
            .map_err(|err| SpecError::InvalidSchema {
                tool: spec.name.to_string(),
                reason: err.to_string(),
            })
    }

    /// Every problem with `input`, in the validator's order; empty when `input` is valid.
    pub(crate) fn problems(&self, input: &Value) -> Vec<ArgumentProblem> {
        if self.validator.is_valid(input) {
            return Vec::new();
        }
        self.validator
            .iter_errors(input)
            .map(|err| {
                let message = self
                    .allowed_values(err.schema_path().as_str())
                    .map(|allowed| format!("{} is not one of {allowed}", err.instance()))
                    .unwrap_or_else(|| err.to_string());
                ArgumentProblem {
                    path: err.instance_path().to_string(),
                    message: truncate_str(&message, MAX_PROBLEM_LEN).into_owned(),
                }
            })
            .collect()
    }

    /// For a failed `oneOf`/`anyOf` whose branches are all constants (what schemars generates
    /// for a documented enum), the allowed values, so the message can list them.
    fn allowed_values(&self, schema_path: &str) -> Option<String> {
        if !(schema_path.ends_with("/oneOf") || schema_path.ends_with("/anyOf")) {
            return None;
        }
        let branches = self.schema.pointer(schema_path)?.as_array()?;
        let values: Option<Vec<String>> = branches
            .iter()
            .map(|branch| branch.get("const").map(Value::to_string))
            .collect();
        values.map(|values| values.join(", "))
    }
}

/// Joins problems into one sentence for the model.
pub(crate) fn describe(problems: &[ArgumentProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator() -> ArgsValidator {
        let spec = ToolSpec::new(
            "t",
            "",
            json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
                "required": ["path"],
                "additionalProperties": false
            }),
        )
        .unwrap();
        ArgsValidator::compile(&spec).unwrap()
    }

    #[test]
    fn one_schema_is_compiled_once_while_held() {
        let spec = |name: &str| {
            ToolSpec::new(
                name,
                "",
                json!({"type": "object", "properties": {"shared_schema_test": {"type": "integer"}}}),
            )
            .unwrap()
        };
        let first = ArgsValidator::shared(&spec("a")).unwrap();
        let second = ArgsValidator::shared(&spec("b")).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(
            second.problems(&json!({"shared_schema_test": "x"})).len(),
            1
        );
    }

    #[test]
    fn valid_input_has_no_problems() {
        assert!(
            validator()
                .problems(&json!({"path": "a", "limit": 3}))
                .is_empty()
        );
    }

    #[test]
    fn problems_name_the_field_and_the_reason() {
        let problems = validator().problems(&json!({"limit": "ten"}));
        let text = describe(&problems);
        assert!(text.contains("\"path\" is a required property"), "{text}");
        assert!(text.contains("at `/limit`"), "{text}");
        assert!(text.contains("not of type \"integer\""), "{text}");
    }

    #[test]
    fn huge_values_are_not_quoted_whole() {
        let problems = validator().problems(&json!({"path": "a", "limit": "x".repeat(10_000)}));
        assert!(
            problems
                .iter()
                .all(|p| p.message.len() <= MAX_PROBLEM_LEN + 64)
        );
    }

    #[test]
    fn an_invalid_schema_is_a_spec_error() {
        let spec = ToolSpec::new(
            "t",
            "",
            json!({"type": "object", "properties": {"a": {"type": 5}}}),
        )
        .unwrap();
        assert!(matches!(
            ArgsValidator::compile(&spec),
            Err(SpecError::InvalidSchema { .. })
        ));
    }
}
