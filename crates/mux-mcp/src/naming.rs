//! Qualified tool names: `mcp__<server>__<tool>`, fitted to the ToolSpec name rules.

use std::collections::BTreeSet;

use mux_tool::MAX_NAME_LEN;

/// The prefix of every MCP tool name.
pub const PREFIX: &str = "mcp__";

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
fn sanitize(part: &str) -> String {
    let cleaned: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_string()
    } else {
        cleaned
    }
}

/// FNV-1a, 64 bits: a stable hash (the same in every build) for name suffixes.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// `name` cut to fit with an 8-hex-digit hash of `(server, tool, salt)` appended.
fn hashed(name: &str, server: &str, tool: &str, salt: u32) -> String {
    let key = format!("{server}\u{0}{tool}\u{0}{salt}");
    let suffix = format!("_{:08x}", fnv1a(key.as_bytes()) as u32);
    let keep = MAX_NAME_LEN - suffix.len();
    // The name is ASCII after sanitizing, so any byte index is a char boundary.
    let head = &name[..name.len().min(keep)];
    format!("{head}{suffix}")
}

/// The qualified name of `tool` on `server`, before collision handling.
///
/// ```
/// assert_eq!(mux_mcp::qualified_name("files", "read_file"), "mcp__files__read_file");
/// assert_eq!(mux_mcp::qualified_name("my server", "a.b"), "mcp__my_server__a_b");
/// assert_eq!(mux_mcp::qualified_name("s", &"x".repeat(100)).len(), 64);
/// ```
pub fn qualified_name(server: &str, tool: &str) -> String {
    let name = format!("{PREFIX}{}__{}", sanitize(server), sanitize(tool));
    if name.len() <= MAX_NAME_LEN {
        name
    } else {
        hashed(&name, server, tool, 0)
    }
}

/// Unique qualified names for a set of `(server, tool)` pairs, in the order given.
///
/// The names depend on the set, not on the order the servers list their tools in, so a
/// `list_changed` that only reorders keeps every name on its tool. A pair whose qualified name
/// needed no sanitizing or shortening keeps it; pairs that collide with it or with each other
/// (two names that sanitize alike) get a hash suffix, handed out in `(server, tool)` order.
pub(crate) fn unique_names(pairs: &[(&str, &str)]) -> Vec<String> {
    let bases: Vec<String> = pairs
        .iter()
        .map(|(server, tool)| qualified_name(server, tool))
        .collect();
    // Whether the qualified name is the pair's own, unsanitized and unshortened.
    let exact: Vec<bool> = bases
        .iter()
        .zip(pairs)
        .map(|(base, (server, tool))| *base == format!("{PREFIX}{server}__{tool}"))
        .collect();
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by(|&a, &b| exact[b].cmp(&exact[a]).then(pairs[a].cmp(&pairs[b])));
    let mut taken = BTreeSet::new();
    let mut names = vec![String::new(); pairs.len()];
    for i in order {
        let (server, tool) = pairs[i];
        let mut candidate = bases[i].clone();
        let mut salt = 1;
        while taken.contains(&candidate) {
            candidate = hashed(&bases[i], server, tool, salt);
            salt += 1;
        }
        taken.insert(candidate.clone());
        names[i] = candidate;
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use mux_tool::ToolName;

    #[test]
    fn names_always_pass_the_tool_name_rules() {
        for (server, tool) in [
            ("fs", "read"),
            ("", ""),
            ("ünïcode", "tööl"),
            ("s", &"t".repeat(200)),
            (&"s".repeat(200), "t"),
            ("a b/c", "x.y:z"),
        ] {
            let name = qualified_name(server, tool);
            assert!(ToolName::new(&name).is_ok(), "{name}");
        }
    }

    #[test]
    fn long_names_differ_by_their_hash() {
        let a = qualified_name("s", &format!("{}a", "t".repeat(100)));
        let b = qualified_name("s", &format!("{}b", "t".repeat(100)));
        assert_eq!(a.len(), MAX_NAME_LEN);
        assert_ne!(a, b);
        assert_eq!(a, qualified_name("s", &format!("{}a", "t".repeat(100))));
    }

    #[test]
    fn collisions_get_distinct_names_whatever_the_order() {
        let pairs = [("s", "a.b"), ("s", "a_b"), ("s", "a b"), ("t", "x")];
        let names = unique_names(&pairs);
        // The tool whose name needed no sanitizing keeps the plain name.
        assert_eq!(names[1], "mcp__s__a_b");
        assert_eq!(names[3], "mcp__t__x");
        let unique: BTreeSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        for name in &names {
            assert!(ToolName::new(name).is_ok(), "{name}");
        }
        let reversed: Vec<_> = pairs.iter().rev().copied().collect();
        let mut again = unique_names(&reversed);
        again.reverse();
        assert_eq!(names, again);
    }

    #[test]
    fn a_tool_listed_twice_still_gets_two_names() {
        let names = unique_names(&[("s", "x"), ("s", "x")]);
        assert_eq!(names[0], "mcp__s__x");
        assert_ne!(names[0], names[1]);
    }
}
