//! `--database-url` for the examples that keep sessions and runs in a database: a session
//! store and a run store on one SQLite file or one PostgreSQL database.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mux::orchestrator::runs::{PostgresRunStore, RunStore, SqliteRunStore};
use mux::orchestrator::session::{PostgresSessionStore, SessionStore, SqliteSessionStore};

/// The session store and the run store of one database.
pub type Stores = (Arc<dyn SessionStore>, Arc<dyn RunStore>);

/// A database named by `--database-url`.
#[derive(Debug, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL URL.
    Postgres(String),
}

impl Database {
    /// Reads a `--database-url`: `sqlite://PATH` (or `sqlite:PATH`), or `postgres://…` /
    /// `postgresql://…` (its query may name the socket directory: `?host=/run/postgresql`).
    pub fn parse(url: &str) -> Result<Self, String> {
        if let Some(path) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            let path = path.split('?').next().unwrap_or_default();
            if path.is_empty() {
                return Err(format!("--database-url `{url}` names no file"));
            }
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(url.to_owned()));
        }
        Err(format!(
            "--database-url `{url}` is neither sqlite://PATH nor postgres://…"
        ))
    }

    /// Opens both stores (creating a SQLite file's directory).
    pub async fn open(&self) -> Result<Stores, String> {
        match self {
            Self::Sqlite(path) => open_sqlite(path).await,
            Self::Postgres(url) => {
                let sessions = PostgresSessionStore::connect(url)
                    .await
                    .map_err(|e| format!("connecting to PostgreSQL: {e}"))?;
                let runs = PostgresRunStore::connect(url)
                    .await
                    .map_err(|e| format!("connecting to PostgreSQL: {e}"))?;
                Ok((Arc::new(sessions), Arc::new(runs)))
            }
        }
    }
}

async fn open_sqlite(path: &Path) -> Result<Stores, String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let sessions = SqliteSessionStore::open(path)
        .await
        .map_err(|e| format!("opening {}: {e}", path.display()))?;
    let runs = SqliteRunStore::open(path)
        .await
        .map_err(|e| format!("opening {}: {e}", path.display()))?;
    Ok((Arc::new(sessions), Arc::new(runs)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn urls_are_read_and_bad_ones_named() {
        assert_eq!(
            Database::parse("sqlite://a/b.db?mode=rwc"),
            Ok(Database::Sqlite(PathBuf::from("a/b.db")))
        );
        assert_eq!(
            Database::parse("sqlite:c.db"),
            Ok(Database::Sqlite(PathBuf::from("c.db")))
        );
        assert_eq!(
            Database::parse("postgresql://u@localhost/db?host=/tmp"),
            Ok(Database::Postgres(
                "postgresql://u@localhost/db?host=/tmp".into()
            ))
        );
        assert!(
            Database::parse("sqlite://")
                .unwrap_err()
                .contains("names no file")
        );
        assert!(
            Database::parse("mysql://x")
                .unwrap_err()
                .contains("mysql://x")
        );
    }
}
