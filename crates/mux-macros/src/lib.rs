#![cfg_attr(docsrs, feature(doc_cfg))]
//! The attribute macros of mux. Use them through the facade: `#[mux::tool]`.
#![forbid(unsafe_code)]

mod tool;

use proc_macro::TokenStream;

/// Makes a typed tool of an `async fn`: a unit struct named in CamelCase after the function
/// (`get_weather` → `GetWeather`) that implements `mux::tool::TypedTool`, beside the function,
/// which stays as written.
///
/// - The function's doc comment is the tool's description; its arguments are the tool's
///   arguments, each with the doc comment on it as its description in the schema. Every
///   argument's type must implement `serde::Deserialize` and `schemars::JsonSchema`.
/// - An argument of type `ToolContext` is not an argument of the tool: it receives the call's
///   context (cancellation, progress, resources).
/// - The function returns a `ToolOutput`, a `String` (text) or a `serde_json::Value` (JSON),
///   or a `Result` of one whose error converts into a `ToolError` (`String` and `&str` do).
/// - Attribute arguments: `name = "…"` (default: the function's name), `description = "…"`
///   (instead of the doc comment), and the annotations `read_only` (also idempotent and shown
///   as a read), `destructive`, `idempotent`, `open_world`.
///
/// The expansion names only paths the `mux` facade re-exports, so `mux` alone is enough.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
