//! The answer to a request rmcp could not read as any method it knows.
//!
//! rmcp reads a client request as the first method shape it matches, and one whose params do
//! not fit its method's shape (`tools/call` with `{"nme": …}`, `"arguments": 5`, no `name`)
//! falls through to a custom request, which rmcp answers with -32601 "method not found".
//! JSON-RPC says -32602 "invalid params" for a method that exists, so a method MCP defines
//! gets -32602 naming what is wrong with its params; any other name keeps -32601.

use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CancelTaskMethod, CancelTaskRequest, CompleteRequest,
    CompleteRequestMethod, ConstString, CustomRequest, DiscoverRequest, DiscoverRequestMethod,
    ErrorCode, ErrorData, GetPromptRequest, GetPromptRequestMethod, GetSkillRequest,
    GetSkillRequestMethod, GetTaskMethod, GetTaskRequest, InitializeRequest,
    InitializeResultMethod, ListPromptsRequest, ListPromptsRequestMethod,
    ListResourceTemplatesRequest, ListResourceTemplatesRequestMethod, ListResourcesRequest,
    ListResourcesRequestMethod, ListSkillsRequest, ListSkillsRequestMethod, ListToolsRequest,
    ListToolsRequestMethod, PingRequest, PingRequestMethod, ReadResourceDirectoryRequest,
    ReadResourceDirectoryRequestMethod, ReadResourceRequest, ReadResourceRequestMethod,
    SetLevelRequest, SetLevelRequestMethod, SubscribeRequest, SubscribeRequestMethod,
    SubscriptionsListenRequest, SubscriptionsListenRequestMethod, UnsubscribeRequest,
    UnsubscribeRequestMethod, UpdateTaskMethod, UpdateTaskRequest,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Why `raw` is not a `T`; `None` when it is one.
type Reader = fn(&Value) -> Option<String>;

fn read<T: DeserializeOwned>(raw: &Value) -> Option<String> {
    serde_json::from_value::<T>(raw.clone())
        .err()
        .map(|err| err.to_string())
}

/// Every client request method MCP defines, with its request's shape.
const KNOWN: [(&str, Reader); 21] = [
    (PingRequestMethod::VALUE, read::<PingRequest>),
    (InitializeResultMethod::VALUE, read::<InitializeRequest>),
    (DiscoverRequestMethod::VALUE, read::<DiscoverRequest>),
    (CompleteRequestMethod::VALUE, read::<CompleteRequest>),
    (SetLevelRequestMethod::VALUE, read::<SetLevelRequest>),
    (GetPromptRequestMethod::VALUE, read::<GetPromptRequest>),
    (ListPromptsRequestMethod::VALUE, read::<ListPromptsRequest>),
    (
        ListResourcesRequestMethod::VALUE,
        read::<ListResourcesRequest>,
    ),
    (
        ListResourceTemplatesRequestMethod::VALUE,
        read::<ListResourceTemplatesRequest>,
    ),
    (
        ReadResourceRequestMethod::VALUE,
        read::<ReadResourceRequest>,
    ),
    (
        SubscriptionsListenRequestMethod::VALUE,
        read::<SubscriptionsListenRequest>,
    ),
    (SubscribeRequestMethod::VALUE, read::<SubscribeRequest>),
    (UnsubscribeRequestMethod::VALUE, read::<UnsubscribeRequest>),
    (CallToolRequestMethod::VALUE, read::<CallToolRequest>),
    (ListToolsRequestMethod::VALUE, read::<ListToolsRequest>),
    (GetTaskMethod::VALUE, read::<GetTaskRequest>),
    (UpdateTaskMethod::VALUE, read::<UpdateTaskRequest>),
    (CancelTaskMethod::VALUE, read::<CancelTaskRequest>),
    (ListSkillsRequestMethod::VALUE, read::<ListSkillsRequest>),
    (GetSkillRequestMethod::VALUE, read::<GetSkillRequest>),
    (
        ReadResourceDirectoryRequestMethod::VALUE,
        read::<ReadResourceDirectoryRequest>,
    ),
];

/// The methods the stateless protocol (2026-07-28, SEP-2575) removed: a request of that
/// protocol naming one is for a method that does not exist there.
const REMOVED_WHEN_STATELESS: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// -32602 naming what is wrong when `request` names a method MCP defines; -32601 otherwise,
/// a method the request's protocol removed included (`stateless`: the request's `_meta`
/// names its protocol version, as only the stateless protocol's requests do).
pub(super) fn answer(request: &CustomRequest, stateless: bool) -> ErrorData {
    let method = request.method.as_str();
    let removed = stateless && REMOVED_WHEN_STATELESS.contains(&method);
    let known = KNOWN.iter().find(|(name, _)| *name == method && !removed);
    let Some((_, reader)) = known else {
        return ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method `{}` is not found", shown(method)),
            None,
        );
    };
    let mut raw = json!({"method": method});
    if let Some(params) = &request.params {
        raw["params"] = params.clone();
    }
    let why = reader(&raw).unwrap_or_else(|| "they do not fit the method".to_owned());
    ErrorData::invalid_params(
        format!("invalid params for {method}: {why}"),
        Some(json!({"method": method})),
    )
}

/// At most 100 characters of a client's method name, for a message.
fn shown(method: &str) -> String {
    method.chars().take(100).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(method: &str, params: Option<Value>) -> (i32, String) {
        coded(method, params, false)
    }

    fn coded(method: &str, params: Option<Value>, stateless: bool) -> (i32, String) {
        let error = answer(&CustomRequest::new(method, params), stateless);
        (error.code.0, error.message.into_owned())
    }

    #[test]
    fn a_defined_method_with_bad_params_is_invalid_params_naming_the_fault() {
        let (c, m) = code("tools/call", Some(json!({"nme": "echo"})));
        assert_eq!(c, -32602);
        assert!(m.contains("tools/call") && m.contains("name"), "{m}");
        let (c, m) = code("tools/call", Some(json!({"name": "echo", "arguments": 5})));
        assert_eq!(c, -32602);
        assert!(m.contains("integer"), "{m}");
        assert_eq!(code("tools/call", None).0, -32602);
        assert_eq!(code("resources/read", Some(json!({"url": "x"}))).0, -32602);
        assert_eq!(code("initialize", Some(json!([]))).0, -32602);
        // A stateless request (its version in `_meta`) naming a method that protocol
        // removed: not found, as SEP-2575 says (the server answers it with HTTP 404).
        for removed in REMOVED_WHEN_STATELESS {
            assert_eq!(coded(removed, Some(json!({})), true).0, -32601, "{removed}");
        }
        assert_eq!(coded("tools/call", Some(json!({})), true).0, -32602);
    }

    #[test]
    fn an_undefined_method_is_method_not_found() {
        assert_eq!(code("tools/nope", Some(json!({}))).0, -32601);
        assert_eq!(code("", None).0, -32601);
        let (_, m) = code(&"x".repeat(10_000), None);
        assert!(m.len() < 200, "the name is cut");
    }
}
