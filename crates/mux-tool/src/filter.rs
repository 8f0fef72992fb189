//! Choosing a subset of tools: by name, glob, annotations, and boolean combinations.

use std::fmt;

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ToolSpec;

/// Which tools are visible. Serializable, so that "tool modes" can live in configuration.
///
/// ```
/// use mux_tool::ToolFilter;
///
/// // Read-only tools, plus anything from the `github` MCP server.
/// let filter: ToolFilter = serde_json::from_value(serde_json::json!({
///     "or": ["read_only", {"glob": "mcp__github__*"}]
/// }))?;
/// assert_eq!(filter, ToolFilter::read_only().or(ToolFilter::glob("mcp__github__*")?));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolFilter {
    /// Every tool.
    #[default]
    All,
    /// No tool.
    None,
    /// Tools with one of these exact names.
    Names(Vec<String>),
    /// Tools whose name matches a glob (`mcp__fs__*`, `read_*`).
    Glob(GlobPattern),
    /// Tools annotated read-only.
    ReadOnly,
    /// Tools annotated destructive.
    Destructive,
    /// Tools annotated idempotent.
    Idempotent,
    /// Tools annotated open-world.
    OpenWorld,
    /// Tools every inner filter accepts.
    And(Vec<ToolFilter>),
    /// Tools some inner filter accepts.
    Or(Vec<ToolFilter>),
    /// Tools the inner filter rejects.
    Not(Box<ToolFilter>),
}

impl ToolFilter {
    /// Tools with one of `names`.
    pub fn names<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Names(names.into_iter().map(Into::into).collect())
    }

    /// Tools whose name matches `pattern`.
    pub fn glob(pattern: &str) -> Result<Self, globset::Error> {
        GlobPattern::new(pattern).map(Self::Glob)
    }

    /// Read-only tools.
    pub fn read_only() -> Self {
        Self::ReadOnly
    }

    /// Both filters.
    pub fn and(self, other: ToolFilter) -> Self {
        Self::And(vec![self, other])
    }

    /// Either filter.
    pub fn or(self, other: ToolFilter) -> Self {
        Self::Or(vec![self, other])
    }

    /// The complement of `inner`.
    #[allow(clippy::should_implement_trait)]
    pub fn not(inner: ToolFilter) -> Self {
        Self::Not(Box::new(inner))
    }

    /// Whether the tool described by `spec` passes.
    pub fn matches(&self, spec: &ToolSpec) -> bool {
        let a = &spec.annotations;
        match self {
            Self::All => true,
            Self::None => false,
            Self::Names(names) => names.iter().any(|n| n == spec.name.as_str()),
            Self::Glob(glob) => glob.is_match(spec.name.as_str()),
            Self::ReadOnly => a.read_only,
            Self::Destructive => a.destructive,
            Self::Idempotent => a.idempotent,
            Self::OpenWorld => a.open_world,
            Self::And(all) => all.iter().all(|f| f.matches(spec)),
            Self::Or(any) => any.iter().any(|f| f.matches(spec)),
            Self::Not(inner) => !inner.matches(spec),
        }
    }
}

/// A compiled glob over tool names that serializes as its pattern string.
#[derive(Clone)]
pub struct GlobPattern {
    pattern: String,
    matcher: GlobMatcher,
}

impl GlobPattern {
    /// Compiles `pattern`.
    pub fn new(pattern: &str) -> Result<Self, globset::Error> {
        let matcher = Glob::new(pattern)?.compile_matcher();
        Ok(Self {
            pattern: pattern.to_owned(),
            matcher,
        })
    }

    /// The source pattern.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether `name` matches.
    pub fn is_match(&self, name: &str) -> bool {
        self.matcher.is_match(name)
    }
}

impl PartialEq for GlobPattern {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
    }
}

impl fmt::Debug for GlobPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("GlobPattern").field(&self.pattern).finish()
    }
}

impl Serialize for GlobPattern {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.pattern)
    }
}

impl<'de> Deserialize<'de> for GlobPattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let pattern = String::deserialize(deserializer)?;
        GlobPattern::new(&pattern).map_err(|err| {
            serde::de::Error::custom(format!("invalid tool glob `{pattern}`: {err}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolAnnotations;
    use serde_json::json;

    fn spec(name: &str, annotations: ToolAnnotations) -> ToolSpec {
        ToolSpec::new(name, "", json!({"type": "object"}))
            .unwrap()
            .with_annotations(annotations)
    }

    #[test]
    fn each_variant_matches_what_it_says() {
        let read = spec("read_file", ToolAnnotations::read_only());
        let rm = spec("rm", ToolAnnotations::destructive());
        let gh = spec(
            "mcp__github__search",
            ToolAnnotations::default().with_open_world(true),
        );

        assert!(ToolFilter::All.matches(&rm));
        assert!(!ToolFilter::None.matches(&rm));
        assert!(ToolFilter::names(["rm"]).matches(&rm));
        assert!(!ToolFilter::names(["rmx"]).matches(&rm));
        assert!(ToolFilter::glob("mcp__github__*").unwrap().matches(&gh));
        assert!(!ToolFilter::glob("mcp__github__*").unwrap().matches(&read));
        assert!(ToolFilter::ReadOnly.matches(&read) && !ToolFilter::ReadOnly.matches(&rm));
        assert!(ToolFilter::Destructive.matches(&rm));
        assert!(ToolFilter::Idempotent.matches(&read));
        assert!(ToolFilter::OpenWorld.matches(&gh));
        assert!(ToolFilter::not(ToolFilter::Destructive).matches(&read));
        assert!(
            !ToolFilter::ReadOnly
                .and(ToolFilter::names(["rm"]))
                .matches(&rm)
        );
        assert!(
            ToolFilter::ReadOnly
                .or(ToolFilter::names(["rm"]))
                .matches(&rm)
        );
    }

    #[test]
    fn filters_round_trip_through_json() {
        let filter = ToolFilter::And(vec![
            ToolFilter::not(ToolFilter::Destructive),
            ToolFilter::glob("read_*")
                .unwrap()
                .or(ToolFilter::names(["bash"])),
        ]);
        let json = serde_json::to_value(&filter).unwrap();
        assert_eq!(
            json,
            json!({"and": [{"not": "destructive"}, {"or": [{"glob": "read_*"}, {"names": ["bash"]}]}]})
        );
        assert_eq!(serde_json::from_value::<ToolFilter>(json).unwrap(), filter);
    }

    #[test]
    fn a_bad_glob_in_config_is_an_error_that_names_it() {
        let err = serde_json::from_value::<ToolFilter>(json!({"glob": "a[b"})).unwrap_err();
        assert!(err.to_string().contains("a[b"), "{err}");
    }
}
