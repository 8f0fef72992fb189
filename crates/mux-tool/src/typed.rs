//! Tools whose arguments are a Rust type: the schema comes from the type.

use std::future::Future;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;

use serde_json::Value;

use crate::{
    BoxFuture, Presentation, SpecError, Subject, Tool, ToolAnnotations, ToolContext, ToolError,
    ToolOutput, ToolSpec,
};

/// A tool with typed arguments. Wrap it in [`Typed`] (or use
/// [`Registry::register_typed`](crate::Registry::register_typed)) to get a [`Tool`].
///
/// ```
/// use mux_tool::{ToolContext, ToolError, ToolOutput, TypedTool};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// The first addend.
///     a: i64,
///     /// The second addend.
///     b: i64,
/// }
///
/// struct Add;
///
/// impl TypedTool for Add {
///     type Args = AddArgs;
///     const NAME: &'static str = "add";
///     fn description(&self) -> String { "Adds two integers".into() }
///     async fn call(&self, args: AddArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::text((args.a + args.b).to_string()))
///     }
/// }
///
/// let tool = mux_tool::Typed::new(Add)?;
/// assert_eq!(tool.spec().input_schema["required"], serde_json::json!(["a", "b"]));
/// # use mux_tool::Tool;
/// # Ok::<(), mux_tool::SpecError>(())
/// ```
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments; their JSON Schema is what the model sees.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// The tool name (`^[A-Za-z0-9_-]{1,64}$`).
    const NAME: &'static str;

    /// What the tool does, written for the model.
    fn description(&self) -> String;

    /// Behaviour hints. Default: none set.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    /// JSON Schema of the structured output, if any.
    fn output_schema(&self) -> Option<Value> {
        None
    }

    /// What a call touches, for the permission layer. Default: nothing.
    fn subject(&self, args: &Self::Args) -> Subject {
        let _ = args;
        Subject::None
    }

    /// What a call with `args` would do, shown to the person asked to approve it (the diff of
    /// an edit, say). Must not change anything. Default: nothing.
    fn preview(&self, args: Self::Args) -> impl Future<Output = Option<Presentation>> + Send {
        let _ = args;
        std::future::ready(None)
    }

    /// Runs the tool with parsed arguments.
    fn call(
        &self,
        args: Self::Args,
        cx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// The JSON Schema for `T` as a tool input schema: draft 2020-12, subschemas inlined where
/// possible, without the `$schema` and `title` keys that only cost the model tokens.
pub fn input_schema_for<T: JsonSchema>() -> Value {
    let mut schema = SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    schema.remove("$schema");
    schema.remove("title");
    schema.to_value()
}

/// A [`TypedTool`] made into a [`Tool`].
pub struct Typed<T: TypedTool> {
    tool: T,
    spec: ToolSpec,
}

impl<T: TypedTool> Typed<T> {
    /// Builds the spec from `T`'s name, description, annotations and argument type.
    pub fn new(tool: T) -> Result<Self, SpecError> {
        let mut spec = ToolSpec::new(T::NAME, tool.description(), input_schema_for::<T::Args>())?
            .with_annotations(tool.annotations());
        spec.output_schema = tool.output_schema();
        Ok(Self { tool, spec })
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.tool
    }

    fn parse(&self, input: &Value) -> Result<T::Args, ToolError> {
        T::Args::deserialize(input).map_err(|err| ToolError::InvalidArguments(err.to_string()))
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn subject(&self, input: &Value) -> Subject {
        self.parse(input)
            .map(|args| self.tool.subject(&args))
            .unwrap_or_default()
    }

    fn preview(&self, input: &Value) -> BoxFuture<'_, Option<Presentation>> {
        let args = self.parse(input);
        Box::pin(async move { self.tool.preview(args.ok()?).await })
    }

    fn call(&self, input: Value, cx: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args = self.parse(&input)?;
            self.tool.call(args, cx).await
        })
    }

    /// Parses the arguments from the caller's `input` before the future is made: no copy of
    /// them, and one box.
    fn call_shared(
        self: Arc<Self>,
        input: &Value,
        cx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let args = self.parse(input);
        Box::pin(async move { self.tool.call(args?, cx).await })
    }
}

impl<T: TypedTool + std::fmt::Debug> std::fmt::Debug for Typed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Typed")
            .field("tool", &self.tool)
            .field("spec", &self.spec)
            .finish()
    }
}
