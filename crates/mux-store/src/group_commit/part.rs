//! One kind of write's share of a commit's statement, and the `$n` placeholders in it.

/// A query of a commit's statement, its parameters bound in turn.
pub(super) type Query<'q> = sqlx::query::QueryAs<
    'q,
    sqlx::Postgres,
    (String, String, Option<String>, Option<i64>),
    sqlx::postgres::PgArguments,
>;

/// One kind of write's share of a commit's statement: its common table expressions, with
/// parameters numbered from `$1`, and the `SELECT` that answers its writes as rows of (kind,
/// id, session, first number).
pub(super) struct Part {
    pub(super) ctes: &'static str,
    pub(super) answer: &'static str,
}

impl Part {
    /// How many parameters the part takes: its highest `$n`.
    pub(super) fn params(&self) -> usize {
        placeholders(self.ctes).max().unwrap_or(0)
    }
}

/// The numbers of the `$n` placeholders in `sql`, in order.
pub(super) fn placeholders(sql: &str) -> impl Iterator<Item = usize> + '_ {
    sql.split('$').skip(1).filter_map(|rest| {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        rest[..digits].parse().ok()
    })
}

/// `sql` with each `$n` placeholder moved on by `by`.
pub(super) fn shift(sql: &str, by: usize) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut pieces = sql.split('$');
    out.push_str(pieces.next().unwrap_or_default());
    for rest in pieces {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        out.push('$');
        match rest[..digits].parse::<usize>() {
            Ok(n) => {
                out.push_str(&(n + by).to_string());
                out.push_str(&rest[digits..]);
            }
            Err(_) => out.push_str(rest),
        }
    }
    out
}
