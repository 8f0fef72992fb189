//! What a tool function may return ([`IntoToolResult`]), for `#[mux::tool]`.

use serde_json::Value;

use crate::{ToolError, ToolOutput};

/// A tool's successful answer: [`ToolOutput`] as it is, a `String` as text, a JSON [`Value`]
/// as JSON.
pub trait IntoToolOutput {
    /// The output.
    fn into_tool_output(self) -> ToolOutput;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> ToolOutput {
        self
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}

impl IntoToolOutput for Value {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::json(self)
    }
}

/// What a tool function made with `#[mux::tool]` may return: anything [`IntoToolOutput`], or a
/// `Result` of one whose error converts into a [`ToolError`] (`String`, `&str` and
/// `std::io::Error` do).
pub trait IntoToolResult {
    /// The call's result.
    fn into_tool_result(self) -> Result<ToolOutput, ToolError>;
}

impl<T: IntoToolOutput> IntoToolResult for T {
    fn into_tool_result(self) -> Result<ToolOutput, ToolError> {
        Ok(self.into_tool_output())
    }
}

impl<T: IntoToolOutput, E: Into<ToolError>> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> Result<ToolOutput, ToolError> {
        self.map(IntoToolOutput::into_tool_output)
            .map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn each_shape_becomes_a_result() {
        assert_eq!("hi".to_owned().into_tool_result().unwrap().to_text(), "hi");
        let json = serde_json::json!({"a": 1}).into_tool_result().unwrap();
        assert!(json.to_text().contains("\"a\""));
        let failed: Result<String, &str> = Err("no such city");
        assert_eq!(
            failed.into_tool_result().unwrap_err().to_string(),
            "no such city"
        );
        let io: Result<ToolOutput, std::io::Error> = Err(std::io::Error::other("disk"));
        assert!(matches!(io.into_tool_result(), Err(ToolError::Io(_))));
    }
}
