//! A live, shareable handle on one scope's rules.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use crate::settings::{self, LoadError, SaveError};
use crate::{Mode, PathContext, Rule, RuleKind, RuleSet};

/// One scope's rules behind an `Arc`, so that every holder sees changes at once.
///
/// The global scope is one `ScopeRules` cloned into every agent's
/// [`Permissions`](crate::Permissions); a rule added to it reaches agents that are already
/// running. A project scope is usually backed by a settings file, which
/// [`save`](Self::save) rewrites atomically.
#[derive(Clone, Debug, Default)]
pub struct ScopeRules {
    rules: Arc<RwLock<RuleSet>>,
    file: Option<Arc<PathBuf>>,
}

impl ScopeRules {
    /// A handle on `rules`, not backed by a file.
    pub fn new(rules: RuleSet) -> Self {
        Self {
            rules: Arc::new(RwLock::new(rules)),
            file: None,
        }
    }

    /// Loads a settings file; [`save`](Self::save) writes back to it. A missing file is an
    /// empty set (it is created on the first save).
    pub fn load(file: impl Into<PathBuf>, context: &PathContext) -> Result<Self, LoadError> {
        Self::load_for_tools(file, context, &[])
    }

    /// As [`load`](Self::load), accepting rules that name one of an application's own
    /// `tools` (a rule naming an unknown tool is otherwise a [`LoadError::UnknownTool`]).
    pub fn load_for_tools(
        file: impl Into<PathBuf>,
        context: &PathContext,
        tools: &[&str],
    ) -> Result<Self, LoadError> {
        let file = file.into();
        let rules = match std::fs::read_to_string(&file) {
            Ok(text) => settings::parse_for_tools(&text, &file, context, tools)?,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => RuleSet::new(),
            Err(source) => return Err(LoadError::Io { file, source }),
        };
        Ok(Self {
            rules: Arc::new(RwLock::new(rules)),
            file: Some(Arc::new(file)),
        })
    }

    /// The settings file behind this scope, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref().map(PathBuf::as_path)
    }

    /// Reads the current rules.
    pub fn read(&self) -> RwLockReadGuard<'_, RuleSet> {
        self.rules
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Changes the rules in place.
    pub fn update<T>(&self, change: impl FnOnce(&mut RuleSet) -> T) -> T {
        let mut guard = self
            .rules
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        change(&mut guard)
    }

    /// Adds a rule. Returns whether it was new.
    pub fn add(&self, kind: RuleKind, rule: Rule) -> bool {
        self.update(|rules| rules.add(kind, rule))
    }

    /// Sets (or clears) the mode.
    pub fn set_mode(&self, mode: Option<Mode>) {
        self.update(|rules| rules.mode = mode);
    }

    /// Writes the rules back to the settings file atomically, keeping the file's other keys.
    pub fn save(&self) -> Result<(), SaveError> {
        let Some(file) = &self.file else {
            return Err(SaveError::NoFile);
        };
        let snapshot = self.read().clone();
        settings::save(file, &snapshot)
    }

    /// Whether both handles share the same rules.
    pub fn same_as(&self, other: &ScopeRules) -> bool {
        Arc::ptr_eq(&self.rules, &other.rules)
    }
}
