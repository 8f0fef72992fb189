//! A dataset: named cases and the evaluators they share, built in code or read from a YAML
//! or JSON file.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::case::{Case, CaseBudget};
use crate::error::EvalError;
use crate::spec::EvaluatorSpec;

/// The largest dataset file read (bytes).
pub const MAX_DATASET_BYTES: u64 = 64 << 20;

/// Cases and what they share.
///
/// ```
/// use mux_eval::{Case, Dataset, EvaluatorSpec};
///
/// let dataset = Dataset::from_yaml(
///     "name: capitals
/// evaluators:
///   - type: contains
///     text: Lima
/// cases:
///   - name: peru
///     input: The capital of Peru?
///     tags: [geo]
/// ",
/// )?;
/// assert_eq!(dataset.cases[0], Case::new("peru", "The capital of Peru?").tag("geo"));
/// # Ok::<(), mux_eval::EvalError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dataset {
    /// The dataset's name (the report's title).
    pub name: String,
    /// The cases, in order.
    pub cases: Vec<Case>,
    /// Evaluators of every case.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evaluators: Vec<EvaluatorSpec>,
    /// The budget of every case (a case's own bounds win).
    #[serde(default)]
    pub budget: CaseBudget,
}

impl Dataset {
    /// An empty dataset named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Adds a case.
    pub fn case(mut self, case: Case) -> Self {
        self.cases.push(case);
        self
    }

    /// Adds an evaluator of every case.
    pub fn evaluator(mut self, spec: EvaluatorSpec) -> Self {
        self.evaluators.push(spec);
        self
    }

    /// Sets the budget of every case.
    pub fn budget(mut self, budget: CaseBudget) -> Self {
        self.budget = budget;
        self
    }

    /// The cases carrying `tag`.
    pub fn with_tag(&self, tag: &str) -> Dataset {
        Dataset {
            cases: self
                .cases
                .iter()
                .filter(|case| case.tags.iter().any(|t| t == tag))
                .cloned()
                .collect(),
            ..self.clone()
        }
    }

    /// Reads a dataset from YAML text, and checks it ([`validate`](Self::validate)).
    pub fn from_yaml(text: &str) -> Result<Self, EvalError> {
        let dataset: Dataset = serde_yaml_ng::from_str(text).map_err(|err| EvalError::Parse {
            path: "<yaml>".into(),
            message: err.to_string(),
        })?;
        dataset.validate()?;
        Ok(dataset)
    }

    /// Reads a dataset from JSON text, and checks it.
    pub fn from_json(text: &str) -> Result<Self, EvalError> {
        let dataset: Dataset = serde_json::from_str(text).map_err(|err| EvalError::Parse {
            path: "<json>".into(),
            message: err.to_string(),
        })?;
        dataset.validate()?;
        Ok(dataset)
    }

    /// Reads a dataset file: `.yaml`/`.yml` as YAML, anything else as JSON.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, EvalError> {
        let path = path.as_ref();
        let text = read_bounded(path, "reading the dataset")?;
        let yaml = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        let parsed = if yaml {
            serde_yaml_ng::from_str::<Dataset>(&text).map_err(|err| err.to_string())
        } else {
            serde_json::from_str::<Dataset>(&text).map_err(|err| err.to_string())
        };
        let dataset = parsed.map_err(|message| EvalError::Parse {
            path: path.to_owned(),
            message,
        })?;
        dataset.validate()?;
        Ok(dataset)
    }

    /// Writes the dataset as YAML (`.yaml`/`.yml`) or JSON.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), EvalError> {
        let path = path.as_ref();
        let yaml = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        let text = if yaml {
            serde_yaml_ng::to_string(self).map_err(|err| err.to_string())
        } else {
            serde_json::to_string_pretty(self).map_err(|err| err.to_string())
        }
        .map_err(|message| EvalError::Parse {
            path: path.to_owned(),
            message,
        })?;
        std::fs::write(path, text).map_err(|source| EvalError::Io {
            operation: "writing the dataset",
            path: path.to_owned(),
            source,
        })
    }

    /// Checks the rules: at least one case; every name non-empty, without control
    /// characters and unique.
    pub fn validate(&self) -> Result<(), EvalError> {
        let invalid = |message: String| EvalError::InvalidDataset {
            dataset: self.name.clone(),
            message,
        };
        if self.cases.is_empty() {
            return Err(invalid("it has no cases".into()));
        }
        let mut seen = BTreeSet::new();
        for case in &self.cases {
            if case.name.trim().is_empty() {
                return Err(invalid("a case has an empty name".into()));
            }
            if case.name.chars().any(char::is_control) {
                return Err(invalid(format!(
                    "case name {:?} has a control character",
                    case.name
                )));
            }
            if !seen.insert(case.name.as_str()) {
                return Err(invalid(format!("two cases are named {:?}", case.name)));
            }
            if case.input.messages().is_empty() {
                return Err(invalid(format!(
                    "case {:?} has no input message",
                    case.name
                )));
            }
        }
        Ok(())
    }
}

/// Reads `path` as UTF-8, refusing files over [`MAX_DATASET_BYTES`].
pub(crate) fn read_bounded(path: &Path, operation: &'static str) -> Result<String, EvalError> {
    let io = |source| EvalError::Io {
        operation,
        path: path.to_owned(),
        source,
    };
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > MAX_DATASET_BYTES {
        return Err(EvalError::Parse {
            path: path.to_owned(),
            message: format!("the file has {len} bytes, more than {MAX_DATASET_BYTES}"),
        });
    }
    std::fs::read_to_string(path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_and_empty_names_are_refused() {
        let twice = Dataset::new("d")
            .case(Case::new("a", "x"))
            .case(Case::new("a", "y"));
        assert!(
            twice
                .validate()
                .is_err_and(|e| e.to_string().contains("two cases"))
        );
        let empty = Dataset::new("d").case(Case::new(" ", "x"));
        assert!(
            empty
                .validate()
                .is_err_and(|e| e.to_string().contains("empty name"))
        );
        assert!(Dataset::new("d").validate().is_err());
        let conversation =
            Dataset::new("d").case(Case::new("c", crate::Input::Conversation(vec![])));
        assert!(
            conversation
                .validate()
                .is_err_and(|e| e.to_string().contains("no input"))
        );
    }

    #[test]
    fn unknown_fields_and_alias_bombs_are_parse_errors() {
        let typo = "name: d\ncases:\n  - name: a\n    input: x\n    expected_outptu: y\n";
        assert!(Dataset::from_yaml(typo).is_err_and(|e| e.to_string().contains("expected_outptu")));
        // A billion-laughs document: levels of nine aliases each in a case's metadata.
        let laughs = |levels: usize| {
            let mut doc =
                String::from("name: d\ncases:\n  - name: a\n    input: x\n    metadata:\n");
            doc.push_str("      l0: &l0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
            for level in 1..levels {
                let refs = vec![format!("*l{}", level - 1); 9].join(",");
                doc.push_str(&format!("      l{level}: &l{level} [{refs}]\n"));
            }
            doc
        };
        assert!(
            Dataset::from_yaml(&laughs(3)).is_ok(),
            "a few aliases are fine"
        );
        let err = Dataset::from_yaml(&laughs(9));
        assert!(
            err.is_err_and(|e| e.to_string().contains("repetition limit")),
            "the bomb parsed"
        );
    }
}
