//! The front door's smallest agent as a real process: the tool runs and the answer carries
//! its result.

use std::process::{Command, Stdio};

use crate::common::example;

#[test]
fn the_smallest_agent_prints_the_sum_its_tool_computed() {
    let output = Command::new(example("agent_in_twelve_lines"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.trim(), "2 + 3 = 5");
}
