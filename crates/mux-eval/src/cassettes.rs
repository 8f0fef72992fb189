//! Offline, deterministic attempts: each case's model traffic is replayed from a cassette
//! file (`DIR/<case>.json`) by a local server, or recorded into it from the real provider.

use std::path::{Path, PathBuf};

use mux_llm::testing::{CassetteMode, CassetteServer};

use crate::error::EvalError;
use crate::record::RunRecord;

/// Where cases' cassettes live and whether they are replayed or recorded.
#[derive(Clone, Debug)]
pub struct Cassettes {
    dir: PathBuf,
    upstream: String,
    mode: CassetteMode,
}

impl Cassettes {
    /// Cassettes in `dir`, replayed, or recorded from `upstream` (the provider's base URL)
    /// when `MUX_RECORD=1`.
    pub fn new(dir: impl Into<PathBuf>, upstream: impl Into<String>) -> Self {
        Self {
            dir: dir.into(),
            upstream: upstream.into(),
            mode: CassetteMode::from_env(),
        }
    }

    /// Replays or records, whatever the environment says.
    pub fn mode(mut self, mode: CassetteMode) -> Self {
        self.mode = mode;
        self
    }

    /// Whether cassettes are recorded.
    pub fn recording(&self) -> bool {
        self.mode == CassetteMode::Record
    }

    /// The cassette of case `name`: `DIR/<name>.json`, every character other than ASCII
    /// letters, digits, `-` and `_` written as `_` (so no name reaches outside `DIR`).
    pub fn path_for(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{}.json", file_stem(name)))
    }

    pub(crate) async fn start(&self, case: &str) -> Result<CassetteServer, EvalError> {
        let path = self.path_for(case);
        let started = match self.mode {
            CassetteMode::Replay => CassetteServer::replay(&path).await,
            CassetteMode::Record => CassetteServer::record(&path, &self.upstream).await,
        };
        started.map_err(|err| EvalError::Cassette {
            case: case.to_owned(),
            message: err.to_string(),
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// `name` as a file stem: ASCII letters, digits, `-` and `_` kept, anything else `_`.
pub(crate) fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Turns what the server saw into the attempt's failure: a request that matched no
/// recording (with the cassette's diff), or recordings left unused.
pub(crate) fn check(server: &CassetteServer, record: &mut RunRecord) {
    let mismatches = server.mismatches();
    if !mismatches.is_empty() {
        let message = format!(
            "a model request matched no recorded interaction (MUX_RECORD=1 records the cassette again):\n{}",
            mismatches.join("\n")
        );
        // The miss is the cause; the model error it led to comes after.
        record.failure = None;
        crate::drive::fail(record, "cassette", message);
        return;
    }
    if server.mode() == CassetteMode::Replay && record.failure.is_none() {
        let left = server.remaining();
        if left > 0 {
            crate::drive::fail(
                record,
                "cassette",
                format!(
                    "{left} recorded interaction(s) were not requested: the agent made fewer model calls than when it was recorded"
                ),
            );
        }
    }
    let errors = server.errors();
    if !errors.is_empty() && record.failure.is_none() {
        crate::drive::fail(record, "cassette", errors.join("\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_leave_the_directory() {
        let cassettes = Cassettes::new("/c", "http://x");
        for name in [
            "../../etc/passwd",
            "/abs",
            "a\\..\\b",
            "..",
            ".hidden",
            "a\0b",
        ] {
            let path = cassettes.path_for(name);
            assert_eq!(path.parent(), Some(Path::new("/c")), "{name}");
            assert!(!path.to_string_lossy().contains(".."), "{name}");
        }
    }
}
