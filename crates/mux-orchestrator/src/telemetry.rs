//! Trace spans in the OpenTelemetry GenAI conventions: `invoke_agent {name}` per run,
//! `chat {model}` per model call (mux-tool adds `execute_tool {name}` per call, under the turn
//! that made it). Exported through `tracing-opentelemetry`, which reads `otel.name`,
//! `otel.kind` and `otel.status_code`.

use std::sync::Arc;

use mux_llm::{LlmError, Request, Response};
use tracing::Span;
use tracing::field::{Empty, display};

use crate::LoopError;
use crate::core::Core;
use crate::run_state::RunShared;
use crate::summary::RunSummary;

/// The provider's name as the conventions want it (`openai`, `vllm`): a client's label
/// without the address it may carry (`vllm (127.0.0.1:8765)`).
pub(crate) fn provider_name(label: &str) -> &str {
    label.split(" (").next().unwrap_or(label)
}

/// The span of one run, under the delegating call's span for a subagent's run.
pub(crate) fn invoke_agent_span(orch: &Core, run: &Arc<RunShared>) -> Span {
    let config = &orch.services.config;
    let parent = match &run.parent {
        Some(parent) => parent.span.id(),
        None => run.caller_span.id(),
    };
    let name = config.name.as_deref();
    let span = tracing::info_span!(
        parent: parent,
        "invoke_agent",
        otel.name = %match name {
            Some(name) => format!("invoke_agent {name}"),
            None => "invoke_agent".to_owned(),
        },
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = provider_name(orch.services.client.provider()),
        gen_ai.agent.name = Empty,
        gen_ai.request.model = %config.model,
        gen_ai.conversation.id = %orch.lock().meta.id,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    );
    if let Some(name) = name {
        span.record("gen_ai.agent.name", name);
    }
    span
}

/// Records how a run ended on its span.
pub(crate) fn record_run(span: &Span, result: &Result<RunSummary, LoopError>) {
    match result {
        Ok(summary) => {
            span.record(
                "gen_ai.usage.input_tokens",
                int(input_tokens(&summary.usage)),
            );
            span.record(
                "gen_ai.usage.output_tokens",
                int(summary.usage.output_tokens),
            );
        }
        Err(err) => {
            span.record("error.type", err.kind());
            span.record("otel.status_code", "ERROR");
        }
    }
}

/// The span of one model call.
pub(crate) fn chat_span(provider: &str, request: &Request, capture: bool) -> Span {
    let span = tracing::info_span!(
        "chat",
        otel.name = %format_args!("chat {}", request.model),
        otel.kind = "client",
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider_name(provider),
        gen_ai.request.model = %request.model,
        gen_ai.request.max_tokens = i64::from(request.max_tokens),
        gen_ai.response.model = Empty,
        gen_ai.response.id = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.system_instructions = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    );
    if capture {
        if let Some(system) = &request.system {
            span.record("gen_ai.system_instructions", system.as_str());
        }
        if let Ok(json) = serde_json::to_string(&*request.messages) {
            span.record("gen_ai.input.messages", json.as_str());
        }
    }
    span
}

/// Records a model call's answer on its span.
pub(crate) fn record_response(span: &Span, response: &Response, capture: bool) {
    if let Some(model) = &response.model {
        span.record("gen_ai.response.model", model.as_str());
    }
    if let Some(id) = &response.id {
        span.record("gen_ai.response.id", id.as_str());
    }
    span.record(
        "gen_ai.response.finish_reasons",
        display(response.stop_reason.as_str()),
    );
    let usage = &response.usage;
    span.record("gen_ai.usage.input_tokens", int(input_tokens(usage)));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    span.record(
        "gen_ai.usage.cache_read.input_tokens",
        int(usage.cache_read_tokens),
    );
    span.record(
        "gen_ai.usage.cache_creation.input_tokens",
        int(usage.cache_write_tokens),
    );
    if capture && let Ok(json) = serde_json::to_string(&response.content) {
        span.record("gen_ai.output.messages", json.as_str());
    }
}

/// Marks a model call's span failed, and passes the error on.
pub(crate) fn chat_failed(span: &Span, err: LlmError) -> LlmError {
    span.record("error.type", err.kind());
    span.record("otel.status_code", "ERROR");
    err
}

/// A count as an `i64`: `tracing-opentelemetry` exports a `u64` as a string, and the
/// conventions want integers.
fn int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// All the input tokens, as the conventions count them (cached ones included).
fn input_tokens(usage: &mux_llm::Usage) -> u64 {
    usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
}

#[cfg(test)]
mod tests {
    use super::provider_name;

    #[test]
    fn the_provider_name_drops_the_address() {
        assert_eq!(provider_name("vllm (127.0.0.1:8765)"), "vllm");
        assert_eq!(provider_name("anthropic"), "anthropic");
    }
}
