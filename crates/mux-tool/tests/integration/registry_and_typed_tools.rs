//! The registry under concurrent use, and the schemas typed tools generate.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use mux_tool::{
    BoxFuture, Registry, RegistryError, SpecError, Tool, ToolAnnotations, ToolContext, ToolError,
    ToolFilter, ToolOutput, ToolSpec, Typed, TypedTool, input_schema_for,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

struct Named(ToolSpec);

impl Tool for Named {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn call(&self, _: Value, _: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text(self.0.description.clone())) })
    }
}

fn named(name: &str, description: &str) -> Named {
    Named(ToolSpec::new(name, description, json!({"type": "object"})).unwrap())
}

#[test]
fn concurrent_register_get_and_list_stay_consistent() {
    let registry = Registry::new();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let registry = registry.clone();
            std::thread::spawn(move || {
                for i in 0..200 {
                    let name = format!("tool_{t}_{i:03}");
                    registry.register(named(&name, "x")).unwrap();
                    assert!(registry.get(&name).is_some());
                    // Every listing is sorted and holds only fully registered tools.
                    let names = registry.names();
                    assert!(names.windows(2).all(|w| w[0] < w[1]));
                    assert!(registry.list().len() > i);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(registry.len(), 1_600);
}

#[test]
fn racing_duplicate_registrations_admit_exactly_one() {
    let registry = Registry::new();
    let results: Vec<_> = (0..16)
        .map(|_| {
            let registry = registry.clone();
            std::thread::spawn(move || registry.register(named("same", "x")))
        })
        .map(|t| t.join().unwrap())
        .collect();
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1);
    assert!(
        results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .all(|e| matches!(e, RegistryError::Duplicate { name } if name == "same"))
    );
}

#[test]
fn replace_swaps_a_tool_only_when_asked() {
    let registry = Registry::new();
    registry.register(named("t", "old")).unwrap();
    assert!(registry.register(named("t", "new")).is_err());
    let previous = registry.replace(Arc::new(named("t", "new"))).unwrap();
    assert_eq!(previous.unwrap().spec().description, "old");
    assert_eq!(registry.get("t").unwrap().spec().description, "new");
    assert!(registry.remove("t").is_some());
    assert!(registry.is_empty());
}

#[test]
fn listing_is_in_name_order_whatever_the_registration_order() {
    let registry = Registry::new();
    for name in ["zeta", "alpha", "mid", "beta"] {
        registry.register(named(name, "")).unwrap();
    }
    assert_eq!(registry.names(), ["alpha", "beta", "mid", "zeta"]);
    let specs: Vec<String> = registry
        .specs()
        .into_iter()
        .map(|s| s.name.to_string())
        .collect();
    assert_eq!(specs, registry.names());
    let shared: Vec<ToolSpec> = registry
        .shared_specs()
        .into_iter()
        .map(|s| (*s).clone())
        .collect();
    assert_eq!(shared, registry.specs());
}

#[test]
fn views_are_live_and_filtered() {
    let registry = common::registry();
    let read_only = registry.view(ToolFilter::read_only());
    assert_eq!(read_only.names(), ["big", "echo", "explode", "sleep"]);
    registry
        .register(Named(
            ToolSpec::new("later", "", json!({"type": "object"}))
                .unwrap()
                .with_annotations(ToolAnnotations::read_only()),
        ))
        .unwrap();
    assert!(read_only.get("later").is_some());
    assert!(read_only.get("run").is_none());
}

#[test]
fn a_tool_with_an_invalid_schema_is_refused_at_registration() {
    let registry = Registry::new();
    let bad =
        Named(ToolSpec::new("bad", "", json!({"type": "object", "required": "path"})).unwrap());
    let err = registry.register(bad).unwrap_err();
    assert!(
        matches!(err, RegistryError::Spec(SpecError::InvalidSchema { ref tool, .. }) if tool == "bad")
    );
}

/// Arguments of a realistic file tool, to pin the schema a model will see.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ReadFileArgs {
    /// Path of the file, relative to the project root.
    path: String,
    /// First line to return (1-based).
    #[serde(default)]
    offset: Option<u32>,
    /// Number of lines to return.
    #[serde(default)]
    limit: Option<u32>,
    /// How to decode the file.
    #[serde(default)]
    encoding: Encoding,
}

/// A text encoding.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
enum Encoding {
    /// UTF-8.
    #[default]
    Utf8,
    /// Latin-1.
    Latin1,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct EditArgs {
    /// Path of the file.
    path: String,
    /// Every replacement to make, in order.
    edits: Vec<Edit>,
    /// Labels to attach.
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

/// One replacement.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Edit {
    /// Text to find.
    old_string: String,
    /// Text to put instead.
    new_string: String,
}

#[test]
fn typed_tool_schemas() {
    insta::assert_json_snapshot!("read_file_args", input_schema_for::<ReadFileArgs>());
    insta::assert_json_snapshot!("edit_args", input_schema_for::<EditArgs>());
    let echo = Typed::new(common::Echo).unwrap();
    insta::assert_json_snapshot!("echo_spec", echo.spec());
}

struct ReadFile;

impl TypedTool for ReadFile {
    type Args = ReadFileArgs;
    const NAME: &'static str = "read_file";
    fn description(&self) -> String {
        "Reads a file".into()
    }
    async fn call(&self, args: ReadFileArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(args.path))
    }
}

#[tokio::test]
async fn invalid_argument_messages_name_each_field() {
    let registry = Registry::new();
    registry.register_typed(ReadFile).unwrap();
    let executor = mux_tool::Executor::builder(registry)
        .approval_policy(mux_tool::ApprovalPolicy::Never)
        .build();
    let cases = [
        (json!({}), r#""path" is a required property"#),
        (
            json!({"path": 7}),
            r#"at `/path`: 7 is not of type "string""#,
        ),
        (
            json!({"path": "a", "offset": -1}),
            "at `/offset`: -1 is less than the minimum of 0",
        ),
        (
            json!({"path": "a", "encoding": "utf16"}),
            r#"at `/encoding`: "utf16" is not one of"#,
        ),
        (
            json!({"path": "a", "extra": true}),
            "Additional properties are not allowed ('extra' was unexpected)",
        ),
        (
            json!("just a string"),
            r#""just a string" is not of type "object""#,
        ),
    ];
    for (input, expected) in cases {
        let outcome = executor
            .execute(
                mux_tool::ToolCall::new("1", "read_file", input.clone()),
                &Default::default(),
            )
            .await;
        let text = outcome.output().to_text();
        assert!(
            text.starts_with("invalid arguments for tool `read_file`: "),
            "{input}: {text}"
        );
        assert!(
            text.contains(expected),
            "{input}: expected {expected:?} in {text:?}"
        );
    }
}

#[test]
fn a_typed_tool_with_a_bad_name_is_a_spec_error() {
    struct BadName;
    impl TypedTool for BadName {
        type Args = common::NoArgs;
        const NAME: &'static str = "bad name";
        fn description(&self) -> String {
            String::new()
        }
        async fn call(&self, _: common::NoArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::default())
        }
    }
    assert!(matches!(
        Typed::new(BadName),
        Err(SpecError::NameCharacter { bad: ' ', .. })
    ));
}
