//! Turning raw field values into checked ones, with errors that name the server and the field.

use std::collections::BTreeMap;
use std::time::Duration;

use super::error::ConfigError;
use super::expand::{ExpandProblem, expand_vars};
use super::raw::{Loose, Text, TextMap, Texts};
use mux_tool::Secret;

/// What checking one entry's fields needs: the server's name, for errors, and the variable
/// lookup for `${VAR}` expansion.
#[derive(Clone, Copy)]
pub(super) struct Fields<'a> {
    /// The server.
    pub(super) server: &'a str,
    /// Looks a variable up.
    pub(super) lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Fields<'_> {
    /// A [`ConfigError::Field`] for `field`.
    pub(super) fn error(&self, field: &str, problem: impl Into<String>) -> ConfigError {
        ConfigError::Field {
            server: self.server.to_string(),
            field: field.to_string(),
            problem: problem.into(),
        }
    }

    /// A string that must be one, with its variables expanded.
    pub(super) fn text(&self, field: &str, value: Loose<String>) -> Result<String, ConfigError> {
        match value {
            Loose::Given(text) => self.expand(field, &text),
            Loose::Wrong => Err(self.error(field, "must be a string")),
        }
    }

    /// An optional string, with its variables expanded; `null` is absent.
    pub(super) fn string(&self, field: &str, value: Text) -> Result<Option<String>, ConfigError> {
        value.map(|value| self.text(field, value)).transpose()
    }

    /// An optional array of strings, each expanded; `not_an_array` says what the field
    /// must be when it is not an array.
    pub(super) fn strings(
        &self,
        field: &str,
        value: Texts,
        not_an_array: &str,
    ) -> Result<Vec<String>, ConfigError> {
        match value {
            None => Ok(Vec::new()),
            Some(Loose::Wrong) => Err(self.error(field, not_an_array)),
            Some(Loose::Given(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| self.text(&format!("{field}[{i}]"), item))
                .collect(),
        }
    }

    /// An optional object of strings (`env`, `headers`), whose values are secrets.
    pub(super) fn secrets(
        &self,
        field: &str,
        value: TextMap,
    ) -> Result<BTreeMap<String, Secret>, ConfigError> {
        match value {
            None => Ok(BTreeMap::new()),
            Some(Loose::Wrong) => Err(self.error(field, "must be an object of strings")),
            Some(Loose::Given(map)) => map
                .into_iter()
                .map(|(key, value)| {
                    let text = self.text(&format!("{field}.{key}"), value)?;
                    Ok((key, Secret::new(text)))
                })
                .collect(),
        }
    }

    /// An optional boolean.
    pub(super) fn flag(
        &self,
        field: &str,
        value: Option<Loose<bool>>,
    ) -> Result<Option<bool>, ConfigError> {
        match value {
            None => Ok(None),
            Some(Loose::Given(flag)) => Ok(Some(flag)),
            Some(Loose::Wrong) => Err(self.error(field, "must be true or false")),
        }
    }

    /// An optional positive number of milliseconds.
    pub(super) fn millis(
        &self,
        field: &str,
        value: Option<Loose<u64>>,
    ) -> Result<Option<Duration>, ConfigError> {
        match value {
            None => Ok(None),
            Some(Loose::Given(ms)) if ms > 0 => Ok(Some(Duration::from_millis(ms))),
            Some(_) => Err(self.error(field, "must be a positive whole number of milliseconds")),
        }
    }

    /// `text` with its `${VAR}` references expanded.
    fn expand(&self, field: &str, text: &str) -> Result<String, ConfigError> {
        expand_vars(text, self.lookup).map_err(|problem| match problem {
            ExpandProblem::Unset(var) => ConfigError::UnsetVariable {
                server: self.server.to_string(),
                field: field.to_string(),
                var,
            },
            other => self.error(field, other.describe()),
        })
    }
}

/// Whether `url` is an `http://` or `https://` URL.
pub(super) fn is_http_url(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}
