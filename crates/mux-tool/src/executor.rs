//! Running tool calls safely: validation, hooks, approval, isolation, limits.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::truncate::limit_output;
use crate::{
    ApprovalGate, ApprovalPolicy, ApprovalRequest, CallOutcome, CallResult, EffectScope, ExecError,
    GateVerdict, HookFailure, PathFilter, PostHook, PostHookAction, PreHook, PreHookAction,
    ProgressSender, RegistryView, Resources, ToolCall, ToolContext, ToolOutput, Verdict,
    registry::Entry,
};

/// Default per-call timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default output limit in bytes.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 100_000;
/// Default number of calls a batch runs at once.
pub const DEFAULT_CONCURRENCY: usize = 16;
/// Default time a cancelled or timed-out tool gets to clean up before its task is aborted.
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_millis(500);

/// Where a call runs: its cancellation, where its progress goes, and how its effect key is
/// made.
#[derive(Clone, Debug, Default)]
pub struct CallScope {
    /// Cancelling this stops the calls running under it. Each call gets a child token.
    pub cancel: CancellationToken,
    /// Receives progress and partial output.
    pub progress: ProgressSender,
    /// Keys each call's effects ([`ToolContext::effect_key`]); without one, a call is keyed
    /// by its id.
    pub effects: Option<Arc<EffectScope>>,
}

impl CallScope {
    /// A scope cancelled by `cancel`, with no progress receiver.
    pub fn with_cancel(cancel: CancellationToken) -> Self {
        Self {
            cancel,
            progress: ProgressSender::disconnected(),
            effects: None,
        }
    }
}

/// Runs tool calls through the pipeline:
///
/// 1. look the tool up (an unknown name gets "did you mean" suggestions);
/// 2. validate the arguments against the input schema;
/// 3. pre-hooks, in order: continue, allow, block, or rewrite (rewrites are validated again);
/// 4. the approval gate (or, with none, the [`ApprovalPolicy`]);
/// 5. the call: polled once in place (most tools finish there, at no task's cost), then, if
///    still pending, in its own task with a timeout and cancellation; a panic becomes an error.
///    Like any async code, a tool must not block its thread: blocking work belongs in
///    `tokio::task::spawn_blocking`, which the timeout and cancellation then cover;
/// 6. the output limit, cut on UTF-8 boundaries with a visible marker;
/// 7. post-hooks, in order.
///
/// Every failure becomes a typed [`ExecError`], which [`CallOutcome::output`] turns into an
/// error output the model can read. Nothing a tool, hook or gate does can panic the executor.
///
/// ```
/// use mux_tool::{CallScope, Executor, Registry, ToolCall, ToolContext, ToolError, ToolOutput, TypedTool};
/// use serde_json::json;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Args { text: String }
/// struct Shout;
/// impl TypedTool for Shout {
///     type Args = Args;
///     const NAME: &'static str = "shout";
///     fn description(&self) -> String { "Upper-cases text".into() }
///     fn annotations(&self) -> mux_tool::ToolAnnotations { mux_tool::ToolAnnotations::read_only() }
///     async fn call(&self, args: Args, _: ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::text(args.text.to_uppercase()))
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let registry = Registry::new();
/// registry.register_typed(Shout)?;
/// let executor = Executor::new(registry);
///
/// let ok = executor.execute(ToolCall::new("1", "shout", json!({"text": "hi"})), &CallScope::default()).await;
/// assert_eq!(ok.output().to_text(), "HI");
///
/// let bad = executor.execute(ToolCall::new("2", "shout", json!({"txt": "hi"})), &CallScope::default()).await;
/// assert!(bad.output().to_text().contains("\"text\" is a required property"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Executor {
    inner: Arc<Inner>,
}

struct Inner {
    tools: RegistryView,
    pre_hooks: Vec<Arc<dyn PreHook>>,
    post_hooks: Vec<Arc<dyn PostHook>>,
    gate: Option<Arc<dyn ApprovalGate>>,
    policy: ApprovalPolicy,
    timeout: Duration,
    tool_timeouts: HashMap<String, Duration>,
    cancel_grace: Duration,
    max_output_bytes: usize,
    concurrency: usize,
    resources: Resources,
    capture_content: bool,
}

impl Executor {
    /// An executor over `tools` with default settings, no hooks and no gate.
    pub fn new(tools: impl Into<RegistryView>) -> Self {
        Self::builder(tools).build()
    }

    /// A builder over `tools`.
    pub fn builder(tools: impl Into<RegistryView>) -> ExecutorBuilder {
        ExecutorBuilder {
            inner: Inner {
                tools: tools.into(),
                pre_hooks: Vec::new(),
                post_hooks: Vec::new(),
                gate: None,
                policy: ApprovalPolicy::default(),
                timeout: DEFAULT_TIMEOUT,
                tool_timeouts: HashMap::new(),
                cancel_grace: DEFAULT_CANCEL_GRACE,
                max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
                concurrency: DEFAULT_CONCURRENCY,
                capture_content: false,
                resources: Resources::new(),
            },
        }
    }

    /// The tools this executor can run.
    pub fn tools(&self) -> &RegistryView {
        &self.inner.tools
    }

    /// The resources shared with every call.
    pub fn resources(&self) -> &Resources {
        &self.inner.resources
    }

    /// Runs one call through the pipeline.
    pub async fn execute(&self, call: ToolCall, scope: &CallScope) -> CallOutcome {
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = %format_args!("execute_tool {}", call.name),
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %call.name,
            gen_ai.tool.call.id = %call.id,
            gen_ai.tool.call.arguments = tracing::field::Empty,
            gen_ai.tool.call.result = tracing::field::Empty,
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        if self.inner.capture_content {
            span.record(
                "gen_ai.tool.call.arguments",
                tracing::field::display(&call.input),
            );
        }
        let outcome = self
            .execute_inner(call, scope)
            .instrument(span.clone())
            .await;
        let error = match &outcome.result {
            Err(err) => Some(err.kind()),
            Ok(output) if output.is_error => Some("tool_error"),
            Ok(_) => None,
        };
        if let Some(kind) = error {
            span.record("error.type", kind);
            span.record("otel.status_code", "ERROR");
        }
        if self.inner.capture_content {
            let text = match &outcome.result {
                Ok(output) => output.to_text(),
                Err(err) => err.to_string(),
            };
            span.record("gen_ai.tool.call.result", text.as_str());
        }
        outcome
    }

    /// Runs calls concurrently, at most the configured concurrency at once, and returns their
    /// outcomes in call order.
    pub async fn execute_batch(
        &self,
        mut calls: Vec<ToolCall>,
        scope: &CallScope,
    ) -> Vec<CallOutcome> {
        if calls.len() == 1
            && let Some(call) = calls.pop()
        {
            // The common case, without the ordering machinery.
            return vec![self.execute(call, scope).await];
        }
        futures::stream::iter(calls.into_iter().map(|call| self.execute(call, scope)))
            .buffered(self.inner.concurrency)
            .collect()
            .await
    }

    async fn execute_inner(&self, mut call: ToolCall, scope: &CallScope) -> CallOutcome {
        let started = Instant::now();
        let mut result = self.run_pipeline(&mut call, scope).await;
        if let Err(err) = &result {
            tracing::debug!(error.type = err.kind(), "tool call failed: {err}");
        }
        let mut hook_failures = Vec::new();
        for hook in &self.inner.post_hooks {
            match guarded(|| hook.after(&call, &result)).await {
                Ok(Ok(PostHookAction::Keep)) => {}
                Ok(Ok(PostHookAction::Replace(output))) => result = Ok(output),
                Ok(Err(err)) => hook_failures.push(failure(hook.name(), err.to_string())),
                Err(panic) => {
                    hook_failures.push(failure(hook.name(), format!("panicked: {panic}")))
                }
            }
        }
        for failed in &hook_failures {
            tracing::warn!(hook = %failed.hook, "post-hook failed: {}", failed.message);
        }
        CallOutcome {
            call,
            result,
            hook_failures,
            duration: started.elapsed(),
        }
    }

    async fn run_pipeline(&self, call: &mut ToolCall, scope: &CallScope) -> CallResult {
        let inner = &self.inner;
        let Some(entry) = inner.tools.entry(&call.name) else {
            return Err(ExecError::UnknownTool {
                suggestions: inner.tools.suggest(&call.name),
                name: call.name.clone(),
            });
        };
        let problems = entry.validator.problems(&call.input);
        if !problems.is_empty() {
            return Err(ExecError::InvalidArguments {
                tool: entry.tool.spec().name.to_string(),
                problems,
            });
        }
        let hooks = self.run_pre_hooks(&entry, call).await?;
        let path_filter = self.approve(&entry, call, &hooks, scope).await?;
        let mut output = self.run_tool(&entry, call, scope, path_filter).await?;
        limit_output(&mut output, inner.max_output_bytes);
        Ok(output)
    }

    /// Runs the pre-hooks; returns which hook pre-approved the call and which asked for it
    /// to be approved, if any did.
    async fn run_pre_hooks(
        &self,
        entry: &Entry,
        call: &mut ToolCall,
    ) -> Result<HooksSaid, ExecError> {
        let spec = entry.tool.spec();
        let mut said = HooksSaid::default();
        for hook in &self.inner.pre_hooks {
            // Named only when the result needs the name: most hooks just continue.
            let hook_name = || hook.name().to_owned();
            let action = match guarded(|| hook.before(call, spec)).await {
                Ok(Ok(action)) => action,
                Ok(Err(err)) => return Err(hook_failed(spec, hook_name(), err.to_string())),
                Err(panic) => {
                    return Err(hook_failed(spec, hook_name(), format!("panicked: {panic}")));
                }
            };
            match action {
                PreHookAction::Continue => {}
                PreHookAction::Allow => said.pre_approved_by = Some(hook_name()),
                PreHookAction::Ask { input } => {
                    said.ask_requested_by = Some(hook_name());
                    if let Some(input) = input {
                        let problems = entry.validator.problems(&input);
                        if !problems.is_empty() {
                            return Err(ExecError::InvalidRewrite {
                                tool: spec.name.to_string(),
                                hook: hook_name(),
                                problems,
                            });
                        }
                        call.input = input;
                    }
                }
                PreHookAction::Deny { reason } => {
                    return Err(ExecError::Blocked {
                        tool: spec.name.to_string(),
                        hook: hook_name(),
                        reason,
                    });
                }
                PreHookAction::Rewrite(input) => {
                    let problems = entry.validator.problems(&input);
                    if !problems.is_empty() {
                        return Err(ExecError::InvalidRewrite {
                            tool: spec.name.to_string(),
                            hook: hook_name(),
                            problems,
                        });
                    }
                    call.input = input;
                }
            }
        }
        Ok(said)
    }

    async fn approve(
        &self,
        entry: &Entry,
        call: &ToolCall,
        hooks: &HooksSaid,
        scope: &CallScope,
    ) -> Result<Option<Arc<dyn PathFilter>>, ExecError> {
        let pre_approved_by = hooks.pre_approved_by.as_deref();
        let ask_requested_by = hooks.ask_requested_by.as_deref();
        let spec = entry.tool.spec();
        let tool = || spec.name.to_string();
        let Some(gate) = &self.inner.gate else {
            // No gate, no one to ask: a hook that asks refuses the call.
            let needs = ask_requested_by.is_some()
                || (pre_approved_by.is_none() && self.inner.policy.requires_approval(spec));
            if needs {
                return Err(ExecError::ApprovalRequired { tool: tool() });
            }
            return Ok(None);
        };
        let subject =
            match std::panic::catch_unwind(AssertUnwindSafe(|| entry.tool.subject(&call.input))) {
                Ok(subject) => subject,
                Err(panic) => {
                    return Err(ExecError::Panicked {
                        tool: tool(),
                        message: panic_message(&*panic),
                    });
                }
            };
        let request = ApprovalRequest {
            call,
            spec: &entry.spec,
            subject: &subject,
            pre_approved_by,
            ask_requested_by,
        };
        let verdict = tokio::select! {
            // The gate first: an instant verdict never registers a cancellation waiter (the
            // call itself checks the token again before it starts).
            biased;
            verdict = guarded(|| gate.review(request)) => verdict,
            () = scope.cancel.cancelled() => return Err(ExecError::Cancelled { tool: tool() }),
        };
        match verdict {
            Ok(GateVerdict {
                verdict: Verdict::Allow,
                ..
            }) => Ok(
                std::panic::catch_unwind(AssertUnwindSafe(|| gate.path_filter(request))).map_err(
                    |panic| ExecError::GateFailed {
                        tool: tool(),
                        message: format!("panicked: {}", panic_message(&*panic)),
                    },
                )?,
            ),
            Ok(GateVerdict { reason, .. }) => Err(ExecError::Denied {
                tool: tool(),
                reason,
            }),
            Err(panic) => Err(ExecError::GateFailed {
                tool: tool(),
                message: format!("panicked: {panic}"),
            }),
        }
    }

    async fn run_tool(
        &self,
        entry: &Entry,
        call: &ToolCall,
        scope: &CallScope,
        path_filter: Option<Arc<dyn PathFilter>>,
    ) -> Result<ToolOutput, ExecError> {
        let inner = &self.inner;
        // The name is copied only for an error: a call that succeeds never needs it.
        let tool_name = || entry.spec.name.to_string();
        if scope.cancel.is_cancelled() {
            return Err(ExecError::Cancelled { tool: tool_name() });
        }
        let cancel = scope.cancel.child_token();
        let cx = ToolContext::for_call(
            call.id.clone(),
            Arc::clone(&entry.spec),
            cancel.clone(),
            scope.progress.clone(),
            inner.resources.clone(),
            path_filter,
            scope.effects.as_ref(),
        );
        // Making the future runs tool code too (a typed tool parses its arguments there).
        let made = std::panic::catch_unwind(AssertUnwindSafe(|| {
            Arc::clone(&entry.tool).call_shared(&call.input, cx)
        }));
        let mut call_future = match made {
            Ok(future) => future,
            Err(panic) => {
                return Err(ExecError::Panicked {
                    message: panic_message(&*panic),
                    tool: tool_name(),
                });
            }
        };
        // Most tools finish in their first poll: polled here, they cost no task. A tool that
        // is still pending moves to its own task, where cancellation and the timeout watch it.
        match std::panic::catch_unwind(AssertUnwindSafe(|| call_future.as_mut().now_or_never())) {
            Ok(Some(result)) => return finished(Ok(result), tool_name),
            Ok(None) => {}
            Err(panic) => {
                return Err(ExecError::Panicked {
                    message: panic_message(&*panic),
                    tool: tool_name(),
                });
            }
        }
        let mut task = AbortOnDrop {
            handle: tokio::spawn(call_future),
            cancel: cancel.clone(),
        };

        // Only a call that did not finish at once needs its timeout.
        let timeout = inner
            .tool_timeouts
            .get(entry.spec.name.as_str())
            .copied()
            .unwrap_or(inner.timeout);
        let deadline = tokio::time::Instant::now() + timeout;
        // Let the tool run once before arming the timer: most tools finish in their first
        // poll, and arming a timer wakes a parked worker to re-read the timer wheel.
        let cancelled = scope.cancel.cancelled();
        tokio::pin!(cancelled);
        tokio::select! {
            biased;
            () = &mut cancelled => {}
            result = &mut task.handle => return finished(result, tool_name),
            () = tokio::task::yield_now() => {}
        }
        let stopped = tokio::select! {
            // Cancellation and the timeout are checked first, so that a tool which returns
            // because it saw its token cancelled is reported as cancelled.
            biased;
            () = &mut cancelled => ExecError::Cancelled { tool: tool_name() },
            () = tokio::time::sleep_until(deadline) => ExecError::TimedOut { tool: tool_name(), after: timeout },
            result = &mut task.handle => return finished(result, tool_name),
        };
        // Tell the tool to stop, give it a moment to clean up (kill its children, say), then
        // abort it. Dropping the task's future runs the tool's drop guards.
        cancel.cancel();
        let _ = tokio::time::timeout(inner.cancel_grace, &mut task.handle).await;
        Err(stopped)
    }
}

/// What a tool task that ran to its end (or panicked) returns to the model; `tool` names
/// the tool in an error.
fn finished(
    joined: Result<Result<ToolOutput, crate::ToolError>, tokio::task::JoinError>,
    tool: impl FnOnce() -> String,
) -> Result<ToolOutput, ExecError> {
    match joined {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(source)) => Err(ExecError::Tool {
            tool: tool(),
            source,
        }),
        Err(err) if err.is_panic() => Err(ExecError::Panicked {
            message: panic_message(&*err.into_panic()),
            tool: tool(),
        }),
        Err(_) => Err(ExecError::Cancelled { tool: tool() }),
    }
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = &self.inner;
        f.debug_struct("Executor")
            .field("tools", &inner.tools.names())
            .field(
                "pre_hooks",
                &inner.pre_hooks.iter().map(|h| h.name()).collect::<Vec<_>>(),
            )
            .field(
                "post_hooks",
                &inner
                    .post_hooks
                    .iter()
                    .map(|h| h.name())
                    .collect::<Vec<_>>(),
            )
            .field("gate", &inner.gate.is_some())
            .field("policy", &inner.policy)
            .field("timeout", &inner.timeout)
            .field("max_output_bytes", &inner.max_output_bytes)
            .field("concurrency", &inner.concurrency)
            .finish_non_exhaustive()
    }
}

/// Configures an [`Executor`].
pub struct ExecutorBuilder {
    inner: Inner,
}

impl ExecutorBuilder {
    /// Records each call's arguments and result on its `execute_tool` span
    /// (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`). Off by default: they may
    /// hold secrets and personal data.
    pub fn capture_content(mut self, capture: bool) -> Self {
        self.inner.capture_content = capture;
        self
    }

    /// Adds a pre-hook; hooks run in the order they are added.
    pub fn pre_hook(mut self, hook: impl PreHook) -> Self {
        self.inner.pre_hooks.push(Arc::new(hook));
        self
    }

    /// Adds a post-hook; hooks run in the order they are added.
    pub fn post_hook(mut self, hook: impl PostHook) -> Self {
        self.inner.post_hooks.push(Arc::new(hook));
        self
    }

    /// Sets the approval gate, consulted for every call.
    pub fn gate(mut self, gate: impl ApprovalGate) -> Self {
        self.inner.gate = Some(Arc::new(gate));
        self
    }

    /// Sets a shared approval gate.
    pub fn shared_gate(mut self, gate: Arc<dyn ApprovalGate>) -> Self {
        self.inner.gate = Some(gate);
        self
    }

    /// Which calls need approval when no gate is set. Default: [`ApprovalPolicy::UnlessReadOnly`].
    pub fn approval_policy(mut self, policy: ApprovalPolicy) -> Self {
        self.inner.policy = policy;
        self
    }

    /// The per-call timeout. Default: [`DEFAULT_TIMEOUT`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.inner.timeout = timeout;
        self
    }

    /// A timeout for one tool, overriding the default.
    pub fn tool_timeout(mut self, tool: impl Into<String>, timeout: Duration) -> Self {
        self.inner.tool_timeouts.insert(tool.into(), timeout);
        self
    }

    /// How long a cancelled tool may take to stop before its task is aborted.
    /// Default: [`DEFAULT_CANCEL_GRACE`].
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.inner.cancel_grace = grace;
        self
    }

    /// The output limit in bytes. Default: [`DEFAULT_MAX_OUTPUT_BYTES`].
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.inner.max_output_bytes = bytes;
        self
    }

    /// How many calls of a batch run at once (at least 1). Default: [`DEFAULT_CONCURRENCY`].
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.inner.concurrency = concurrency.max(1);
        self
    }

    /// Resources shared with every call through [`ToolContext::resources`].
    pub fn resources(mut self, resources: Resources) -> Self {
        self.inner.resources = resources;
        self
    }

    /// Builds the executor.
    pub fn build(self) -> Executor {
        Executor {
            inner: Arc::new(self.inner),
        }
    }
}

/// A call's task: when the executor stops waiting for it (the call was cancelled, timed out,
/// or the caller dropped the `execute` future), the tool's token is cancelled and the task is
/// aborted, so no tool keeps running unobserved.
struct AbortOnDrop<T> {
    handle: tokio::task::JoinHandle<T>,
    cancel: CancellationToken,
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.handle.abort();
    }
}

/// Builds the future with `make` and polls it, turning a panic in either into its message.
async fn guarded<F: Future>(make: impl FnOnce() -> F) -> Result<F::Output, String> {
    let future =
        std::panic::catch_unwind(AssertUnwindSafe(make)).map_err(|panic| panic_message(&*panic))?;
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(|panic| panic_message(&*panic))
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

fn hook_failed(spec: &crate::ToolSpec, hook: String, message: String) -> ExecError {
    ExecError::HookFailed {
        tool: spec.name.to_string(),
        hook,
        message,
    }
}

fn failure(hook: &str, message: String) -> HookFailure {
    HookFailure {
        hook: hook.to_owned(),
        message,
    }
}
/// What the pre-hooks said of a call, for the approval step.
#[derive(Debug, Default)]
struct HooksSaid {
    /// The hook that approved the call in advance.
    pre_approved_by: Option<String>,
    /// The hook that asked for someone's approval.
    ask_requested_by: Option<String>,
}
