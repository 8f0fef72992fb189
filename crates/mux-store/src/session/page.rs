//! Pages of the session list: a cursor and the page type, and paging a full list.

use std::cmp::Ordering;

use super::meta::SessionMeta;

/// Where a page of the session list ends: the last session's update time and id.
///
/// The list is ordered by `updated_at_ms` descending, then `id` ascending, so a cursor names a
/// position that stays meaningful while sessions are added or deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageCursor {
    /// The last listed session's `updated_at_ms`.
    pub updated_at_ms: u64,
    /// The last listed session's id.
    pub id: String,
}

impl From<&SessionMeta> for PageCursor {
    fn from(meta: &SessionMeta) -> Self {
        Self {
            updated_at_ms: meta.updated_at_ms,
            id: meta.id.clone(),
        }
    }
}

impl PageCursor {
    /// Whether `meta` comes after this cursor in the list's order.
    pub fn is_before(&self, meta: &SessionMeta) -> bool {
        list_order(self.updated_at_ms, &self.id, meta.updated_at_ms, &meta.id) == Ordering::Less
    }
}

/// One page of the session list.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionPage {
    /// The sessions, in list order.
    pub sessions: Vec<SessionMeta>,
    /// The cursor for the next page; `None` when this page is the last.
    pub next: Option<PageCursor>,
}

/// The list's order: most recently updated first, then by id.
pub(crate) fn list_order(a_updated: u64, a_id: &str, b_updated: u64, b_id: &str) -> Ordering {
    b_updated.cmp(&a_updated).then_with(|| a_id.cmp(b_id))
}

/// Sorts `metas` in list order.
pub(crate) fn sort(metas: &mut [SessionMeta]) {
    metas.sort_by(|a, b| list_order(a.updated_at_ms, &a.id, b.updated_at_ms, &b.id));
}

/// The page of `all` (in list order) after `after`, at most `limit` long.
pub(crate) fn page_of(
    all: Vec<SessionMeta>,
    after: Option<&PageCursor>,
    limit: usize,
) -> SessionPage {
    let mut rest = all
        .into_iter()
        .filter(|meta| after.is_none_or(|cursor| cursor.is_before(meta)));
    let sessions: Vec<SessionMeta> = rest.by_ref().take(limit).collect();
    finish(sessions, limit, rest.next().is_some())
}

/// A page from `sessions`, with a cursor when `more` follow (or the page is full).
pub(crate) fn finish(sessions: Vec<SessionMeta>, limit: usize, more: bool) -> SessionPage {
    let next = if more && sessions.len() == limit {
        sessions.last().map(PageCursor::from)
    } else {
        None
    };
    SessionPage { sessions, next }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str, updated: u64) -> SessionMeta {
        let mut meta = SessionMeta::new();
        meta.id = id.to_owned();
        meta.updated_at_ms = updated;
        meta
    }

    #[test]
    fn pages_walk_the_list_once_in_order() {
        let mut all: Vec<SessionMeta> = (0..7).map(|i| meta(&format!("s{i}"), i / 2)).collect();
        sort(&mut all);
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let page = page_of(all.clone(), after.as_ref(), 3);
            seen.extend(page.sessions.iter().map(|m| m.id.clone()));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        let expected: Vec<String> = all.iter().map(|m| m.id.clone()).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn an_exact_last_page_has_no_cursor() {
        let all: Vec<SessionMeta> = (0..3).map(|i| meta(&format!("s{i}"), 1)).collect();
        assert!(page_of(all, None, 3).next.is_none());
    }
}
