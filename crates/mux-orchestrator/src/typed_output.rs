//! Structured output: the schema a typed answer is asked for with, and the check of the reply.

use mux_llm::OutputSchema;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The longest problem text sent back to the model or kept in an error.
const MAX_PROBLEM_LEN: usize = 600;

/// The schema of `T`, named after it.
pub(crate) fn schema_of<T: JsonSchema>() -> OutputSchema {
    let schema = schemars::schema_for!(T);
    OutputSchema::new(T::schema_name(), schema.to_value())
}

/// Reads `reply` as a `T` that satisfies `schema`, or says what is wrong with it. A reply
/// wrapped in a Markdown code fence is unwrapped first.
pub(crate) fn read<T: DeserializeOwned>(schema: &OutputSchema, reply: &str) -> Result<T, String> {
    let json = strip_fence(reply);
    let value: Value =
        serde_json::from_str(json).map_err(|err| cut(format!("the reply is not JSON ({err})")))?;
    let validator = jsonschema::validator_for(&schema.schema).map_err(|err| {
        cut(format!(
            "the schema `{}` does not compile: {err}",
            schema.name
        ))
    })?;
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|err| {
            let path = err.instance_path().to_string();
            if path.is_empty() {
                err.to_string()
            } else {
                format!("at `{path}`: {err}")
            }
        })
        .collect();
    if !problems.is_empty() {
        return Err(cut(problems.join("; ")));
    }
    serde_json::from_value(value).map_err(|err| cut(err.to_string()))
}

/// What the model is told when its reply did not fit.
pub(crate) fn correction(schema: &OutputSchema, problem: &str) -> String {
    format!(
        "Your answer did not match the required JSON schema `{}`: {problem}. Reply again with only the corrected JSON.",
        schema.name
    )
}

fn strip_fence(reply: &str) -> &str {
    let trimmed = reply.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let body = rest.split_once('\n').map_or("", |(_, body)| body);
    body.strip_suffix("```").unwrap_or(body).trim()
}

fn cut(mut text: String) -> String {
    if text.len() > MAX_PROBLEM_LEN {
        let mut end = MAX_PROBLEM_LEN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
    struct Weather {
        city: String,
        /// Degrees Celsius.
        #[schemars(range(min = -90, max = 60))]
        temp: i32,
    }

    #[test]
    fn a_fenced_valid_reply_is_read() {
        let schema = schema_of::<Weather>();
        assert_eq!(schema.name, "Weather");
        let reply = "```json\n{\"city\": \"Oslo\", \"temp\": -3}\n```";
        assert_eq!(
            read::<Weather>(&schema, reply),
            Ok(Weather {
                city: "Oslo".into(),
                temp: -3
            })
        );
    }

    #[test]
    fn problems_name_the_place_and_the_rule() {
        let schema = schema_of::<Weather>();
        let problem = read::<Weather>(&schema, r#"{"city": "Oslo", "temp": 99}"#).unwrap_err();
        assert!(problem.contains("/temp"), "{problem}");
        let problem = read::<Weather>(&schema, "It is cold in Oslo.").unwrap_err();
        assert!(problem.starts_with("the reply is not JSON"), "{problem}");
    }
}
