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

/// Hands out qualified names that are unique within one tool set.
#[derive(Debug, Default)]
pub(crate) struct NameAllocator {
    taken: BTreeSet<String>,
}

impl NameAllocator {
    /// A unique name for `tool` on `server`: the qualified name, or on a collision (two
    /// names that sanitize alike) the same name with a hash suffix.
    pub(crate) fn allocate(&mut self, server: &str, tool: &str) -> String {
        let base = qualified_name(server, tool);
        let mut candidate = base.clone();
        let mut salt = 1;
        while self.taken.contains(&candidate) {
            candidate = hashed(&base, server, tool, salt);
            salt += 1;
        }
        self.taken.insert(candidate.clone());
        candidate
    }
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
    fn collisions_get_distinct_names() {
        let mut names = NameAllocator::default();
        let first = names.allocate("s", "a.b");
        let second = names.allocate("s", "a_b");
        let third = names.allocate("s", "a b");
        assert_eq!(first, "mcp__s__a_b");
        assert_ne!(first, second);
        assert_ne!(second, third);
        for name in [first, second, third] {
            assert!(ToolName::new(&name).is_ok());
        }
    }
}
