//! Snapshots of what the model sees of each built-in tool: name, description, input schema
//! and annotations. A change here changes every conversation; review it.
#![cfg(feature = "builtin")]

use mux_tool::builtin::{self, Sandbox};

#[test]
fn builtin_tool_specs() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtin::tools(&Sandbox::new(dir.path()).unwrap()).unwrap();
    for tool in tools {
        let spec = tool.spec();
        insta::assert_json_snapshot!(spec.name.as_str(), spec);
    }
}
