//! The default deny of internal addresses: a URL whose host is loopback, link-local, a cloud
//! metadata service or the unspecified address is refused in every mode, bypass included,
//! unless an allow rule names that host (`WebFetch(domain:localhost)`).
//!
//! Which hosts are internal is [`mux_tool::address`]'s answer for the host as the fetcher's
//! URL parser reads it ([`host_of`](crate::host_of)), so no spelling of an address
//! (`http://2852039166/`, `http://[::ffff:a9fe:a9fe]/`, `http://127.1/`) slips past.

use mux_tool::address::classify_host;

use crate::prepared::Prepared;
use crate::{GateVerdict, Rule, Scope, Verdict};

/// The decision for a URL subject that is, or may be, internal; `None` for anything else,
/// and for an internal host an allow rule among `allow_rules` names.
pub(crate) fn internal_address<'a>(
    prepared: &Prepared,
    mut allow_rules: impl Iterator<Item = (Scope, &'a Rule)>,
) -> Option<GateVerdict> {
    let Prepared::Url(host) = prepared else {
        return None;
    };
    let host = match host {
        Ok(host) => host,
        Err(why) => {
            return Some(GateVerdict::new(
                Verdict::Ask,
                format!("{why}, so it cannot be ruled out as an internal address"),
            ));
        }
    };
    let kind = classify_host(host)?;
    let named = allow_rules.any(|(_, rule)| {
        rule.spec()
            .and_then(|spec| spec.domain.as_ref())
            .is_some_and(|domain| domain.allows(host))
    });
    (!named).then(|| {
        GateVerdict::new(
            Verdict::Deny,
            format!(
                "`{host}` is a {kind} address, refused in every mode unless an allow rule names it \
                 (`domain:{host}`)"
            ),
        )
    })
}
