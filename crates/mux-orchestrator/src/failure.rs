//! Stopping failure loops: the same tool, with the same (normalized) arguments, failing the
//! same way again and again.

use mux_tool::ToolCall;
use serde_json::Value;

/// Counts consecutive identical failures.
#[derive(Debug)]
pub(crate) struct FailureTracker {
    threshold: u32,
    last: Option<(String, u32)>,
}

impl FailureTracker {
    pub(crate) fn new(threshold: u32) -> Self {
        Self {
            threshold: threshold.max(1),
            last: None,
        }
    }

    /// Records a call's result. Returns the count when an identical failure reaches the
    /// threshold. A success resets the count.
    pub(crate) fn record(&mut self, call: &ToolCall, error: Option<&str>) -> Option<u32> {
        let Some(error) = error else {
            self.last = None;
            return None;
        };
        let fingerprint = fingerprint(call, error);
        let count = match &self.last {
            Some((last, count)) if *last == fingerprint => count + 1,
            _ => 1,
        };
        self.last = Some((fingerprint, count));
        (count >= self.threshold).then_some(count)
    }
}

/// Tool name, arguments with sorted keys and trimmed strings, and the error with digits
/// masked (so "line 12" and "line 13" count as the same failure).
fn fingerprint(call: &ToolCall, error: &str) -> String {
    let masked: String = error
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    format!(
        "{}\u{1f}{}\u{1f}{}",
        call.name,
        normalize(&call.input),
        masked.trim()
    )
}

fn normalize(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}:{}", normalize(&map[k.as_str()])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(normalize).collect::<Vec<_>>().join(",")
        ),
        Value::String(s) => format!("{:?}", s.trim()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identical_failures_reach_the_threshold() {
        let mut tracker = FailureTracker::new(3);
        let a = ToolCall::new("1", "read", json!({"path": "x", "n": 1}));
        let same = ToolCall::new("2", "read", json!({"n": 1, "path": " x "}));
        assert_eq!(tracker.record(&a, Some("not found at line 3")), None);
        assert_eq!(tracker.record(&same, Some("not found at line 4")), None);
        assert_eq!(tracker.record(&a, Some("not found at line 5")), Some(3));
    }

    #[test]
    fn a_success_or_a_different_failure_resets() {
        let mut tracker = FailureTracker::new(2);
        let a = ToolCall::new("1", "read", json!({"path": "x"}));
        let b = ToolCall::new("2", "read", json!({"path": "y"}));
        tracker.record(&a, Some("boom"));
        assert_eq!(tracker.record(&b, Some("boom")), None);
        assert_eq!(tracker.record(&b, None), None);
        assert_eq!(tracker.record(&b, Some("boom")), None);
        assert_eq!(tracker.record(&b, Some("boom")), Some(2));
    }
}
