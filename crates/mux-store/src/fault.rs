//! [`StoreFault`]: why a store could not take a write, in words a face may show a client
//! (the driver's own text, which can hold OS errors and paths, goes to the log).
//!
//! Both stores' errors name one ([`RunStoreError::fault`](super::RunStoreError::fault),
//! [`SessionError::fault`](crate::session::SessionError::fault)): a face answers any of them
//! with its documented "store unavailable" status, and recovery needs only the cause gone.

/// Why a store could not read or write: the database is out of reach or refuses writes for
/// a reason outside the request (not a bad request, not a missing row).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreFault {
    /// The disk (or the database's quota) is full.
    Full,
    /// The file system or the database is read-only.
    ReadOnly,
    /// Another connection holds the lock a write needs, past the wait allowed.
    Locked,
    /// The database cannot be reached (connection refused or lost, server shut down, the
    /// file cannot be opened, no connection free in time).
    Unreachable,
    /// The database did not answer within the time allowed.
    Unanswered,
    /// The database failed in another way (an I/O error, a damaged file).
    Failed,
}

impl StoreFault {
    /// A stable, machine-readable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "disk_full",
            Self::ReadOnly => "read_only",
            Self::Locked => "locked",
            Self::Unreachable => "unreachable",
            Self::Unanswered => "unanswered",
            Self::Failed => "failed",
        }
    }

    /// The fault an I/O error shows.
    pub fn of_io(err: &std::io::Error) -> Self {
        use std::io::ErrorKind;
        match err.kind() {
            ErrorKind::StorageFull | ErrorKind::QuotaExceeded => Self::Full,
            ErrorKind::ReadOnlyFilesystem | ErrorKind::PermissionDenied => Self::ReadOnly,
            ErrorKind::TimedOut => Self::Unanswered,
            ErrorKind::ConnectionRefused
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::NotConnected
            | ErrorKind::BrokenPipe
            | ErrorKind::UnexpectedEof
            | ErrorKind::HostUnreachable
            | ErrorKind::NetworkUnreachable
            | ErrorKind::NetworkDown
            | ErrorKind::AddrNotAvailable => Self::Unreachable,
            _ => Self::Failed,
        }
    }

    /// The fault a database error code shows: SQLite's result code (a number, primary or
    /// extended) or PostgreSQL's SQLSTATE; `None` when the code names a refusal of the
    /// request itself (a constraint, a syntax error).
    pub fn of_code(code: &str) -> Option<Self> {
        // A SQLSTATE has five characters; SQLite's codes, at most four digits.
        if let Ok(number) = code
            .parse::<i64>()
            .map_err(|_| ())
            .and_then(|n| if code.len() < 5 { Ok(n) } else { Err(()) })
        {
            // SQLite: the primary result code is the extended code's low byte.
            return match number & 0xff {
                13 => Some(Self::Full),
                8 => Some(Self::ReadOnly),
                5 | 6 => Some(Self::Locked),
                14 => Some(Self::Unreachable),
                10 | 11 | 26 => Some(Self::Failed),
                _ => None,
            };
        }
        // PostgreSQL's SQLSTATE: its class, or the code.
        match code {
            "53100" => Some(Self::Full),
            "25006" => Some(Self::ReadOnly),
            "55P03" | "40P01" => Some(Self::Locked),
            "57014" => Some(Self::Unanswered),
            "53300" | "57P01" | "57P02" | "57P03" => Some(Self::Unreachable),
            _ if code.starts_with("08") => Some(Self::Unreachable),
            _ if code.starts_with("53") || code.starts_with("58") || code.starts_with("XX") => {
                Some(Self::Failed)
            }
            _ => None,
        }
    }

    /// The fault a driver error shows, or `None` when the database refused the request
    /// itself.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn of_sqlx(err: &sqlx::Error) -> Option<Self> {
        match err {
            sqlx::Error::Io(io) => Some(Self::of_io(io)),
            sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => Some(Self::Unreachable),
            sqlx::Error::Protocol(_) => Some(Self::Unreachable),
            sqlx::Error::Database(db) => db.code().as_deref().and_then(Self::of_code),
            _ => None,
        }
    }
}

impl std::fmt::Display for StoreFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Full => "the store's disk is full",
            Self::ReadOnly => "the store is read-only",
            Self::Locked => "the store is locked by another connection",
            Self::Unreachable => "the store cannot be reached",
            Self::Unanswered => "the store did not answer in time",
            Self::Failed => "the store failed",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_name_their_fault() {
        // SQLite: primary and extended codes.
        assert_eq!(StoreFault::of_code("13"), Some(StoreFault::Full));
        assert_eq!(StoreFault::of_code("8"), Some(StoreFault::ReadOnly));
        assert_eq!(StoreFault::of_code("1032"), Some(StoreFault::ReadOnly));
        assert_eq!(StoreFault::of_code("5"), Some(StoreFault::Locked));
        assert_eq!(StoreFault::of_code("517"), Some(StoreFault::Locked));
        assert_eq!(StoreFault::of_code("3338"), Some(StoreFault::Failed));
        assert_eq!(StoreFault::of_code("2067"), None, "a unique constraint");
        assert_eq!(StoreFault::of_code("1"), None, "a syntax error");
        // PostgreSQL.
        assert_eq!(StoreFault::of_code("53100"), Some(StoreFault::Full));
        assert_eq!(StoreFault::of_code("08006"), Some(StoreFault::Unreachable));
        assert_eq!(StoreFault::of_code("57P01"), Some(StoreFault::Unreachable));
        assert_eq!(StoreFault::of_code("57014"), Some(StoreFault::Unanswered));
        assert_eq!(StoreFault::of_code("25006"), Some(StoreFault::ReadOnly));
        assert_eq!(StoreFault::of_code("55P03"), Some(StoreFault::Locked));
        assert_eq!(StoreFault::of_code("23505"), None, "a unique violation");
        assert_eq!(StoreFault::of_code("42601"), None, "a syntax error");
    }

    #[test]
    fn io_errors_name_their_fault() {
        use std::io::{Error, ErrorKind};
        let of = |kind| StoreFault::of_io(&Error::from(kind));
        assert_eq!(of(ErrorKind::StorageFull), StoreFault::Full);
        assert_eq!(of(ErrorKind::ReadOnlyFilesystem), StoreFault::ReadOnly);
        assert_eq!(of(ErrorKind::BrokenPipe), StoreFault::Unreachable);
        assert_eq!(of(ErrorKind::ConnectionRefused), StoreFault::Unreachable);
        assert_eq!(of(ErrorKind::Other), StoreFault::Failed);
        // ENOSPC as the OS reports it.
        assert_eq!(
            StoreFault::of_io(&Error::from_raw_os_error(28)),
            StoreFault::Full
        );
    }
}
