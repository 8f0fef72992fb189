//! The loop's pre- and post-tool-use hooks, plugged into mux-tool's executor.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use mux_tool::hooks::{
    HookError as ToolHookError, PostHook, PostHookAction, PreHook, PreHookAction,
};
use mux_tool::{BoxFuture, CallResult, ToolCall, ToolSpec};

use crate::ask_user::ASK_USER;
use crate::event::LoopEvent;
use crate::hooks::{Hooks, PostToolAction, PreToolAction};
use crate::run_state::RunShared;

/// Runs every loop hook's `pre_tool_use` in order. Allow pre-approves, Deny blocks, Ask makes
/// the gate ask (it travels with the call: [`PreHookAction::Ask`]), Rewrite changes what later
/// hooks and the tool see. A hook that fails or panics blocks the call (an unchecked call must
/// not run) and is reported as an event.
pub(crate) struct PreToolHooks {
    pub(crate) hooks: Hooks,
    pub(crate) run: Arc<RunShared>,
}

impl PreHook for PreToolHooks {
    fn name(&self) -> &str {
        "pre_tool_use"
    }

    fn before<'a>(
        &'a self,
        call: &'a ToolCall,
        _spec: &'a ToolSpec,
    ) -> BoxFuture<'a, Result<PreHookAction, ToolHookError>> {
        let hooks = self.hooks.snapshot();
        if hooks.is_empty() {
            return Box::pin(std::future::ready(Ok(PreHookAction::Continue)));
        }
        Box::pin(async move {
            let mut current = call.clone();
            let mut rewritten = false;
            let mut allowed = false;
            let mut asked = false;
            for hook in self.hooks.snapshot() {
                let outcome = AssertUnwindSafe(async { hook.pre_tool_use(&current).await })
                    .catch_unwind()
                    .await;
                let action = match outcome {
                    Ok(Ok(action)) => action,
                    Ok(Err(err)) => {
                        self.report(hook.name(), &err.message).await;
                        if err.stop_run {
                            self.run.request_stop(hook.name(), &err.message);
                        }
                        return Ok(PreHookAction::deny(format!(
                            "hook `{}` failed: {}",
                            hook.name(),
                            err.message
                        )));
                    }
                    Err(_) => {
                        self.report(hook.name(), "panicked").await;
                        return Ok(PreHookAction::deny(format!(
                            "hook `{}` panicked",
                            hook.name()
                        )));
                    }
                };
                match action {
                    PreToolAction::Continue => {}
                    PreToolAction::Allow => allowed = true,
                    PreToolAction::Deny { reason } => return Ok(PreHookAction::Deny { reason }),
                    PreToolAction::Ask => asked = true,
                    PreToolAction::Rewrite(input) => {
                        current.input = input;
                        rewritten = true;
                    }
                }
            }
            Ok(match (asked, rewritten, allowed) {
                (true, rewritten, _) => PreHookAction::Ask {
                    input: rewritten.then_some(current.input),
                },
                (false, true, _) => PreHookAction::Rewrite(current.input),
                (false, false, true) => PreHookAction::Allow,
                (false, false, false) => PreHookAction::Continue,
            })
        })
    }
}

impl PreToolHooks {
    async fn report(&self, hook: &str, message: &str) {
        self.run
            .emit(LoopEvent::HookFailed {
                hook: hook.to_owned(),
                point: "pre_tool_use".into(),
                message: message.to_owned(),
            })
            .await;
    }
}

/// Pre-approves `ask_user`: asking the user a question needs no permission.
pub(crate) struct AskUserIsAllowed;

impl PreHook for AskUserIsAllowed {
    fn name(&self) -> &str {
        "ask_user_is_allowed"
    }

    fn before<'a>(
        &'a self,
        call: &'a ToolCall,
        _spec: &'a ToolSpec,
    ) -> BoxFuture<'a, Result<PreHookAction, ToolHookError>> {
        let action = if call.name == ASK_USER {
            PreHookAction::Allow
        } else {
            PreHookAction::Continue
        };
        Box::pin(std::future::ready(Ok(action)))
    }
}

/// Runs every loop hook's `post_tool_use` in order; a replacement is what later hooks and the
/// model see. A failing hook is reported and skipped.
pub(crate) struct PostToolHooks {
    pub(crate) hooks: Hooks,
    pub(crate) run: Arc<RunShared>,
}

impl PostHook for PostToolHooks {
    fn name(&self) -> &str {
        "post_tool_use"
    }

    fn after<'a>(
        &'a self,
        call: &'a ToolCall,
        result: &'a CallResult,
    ) -> BoxFuture<'a, Result<PostHookAction, ToolHookError>> {
        let hooks = self.hooks.snapshot();
        if hooks.is_empty() {
            return Box::pin(std::future::ready(Ok(PostHookAction::Keep)));
        }
        Box::pin(async move {
            let mut output = match result {
                Ok(output) => output.clone(),
                Err(err) => err.to_output(),
            };
            let mut replaced = false;
            for hook in self.hooks.snapshot() {
                let outcome = AssertUnwindSafe(async { hook.post_tool_use(call, &output).await })
                    .catch_unwind()
                    .await;
                let message = match outcome {
                    Ok(Ok(PostToolAction::Keep)) => continue,
                    Ok(Ok(PostToolAction::Replace(new))) => {
                        output = new;
                        replaced = true;
                        continue;
                    }
                    Ok(Err(err)) => {
                        if err.stop_run {
                            self.run.request_stop(hook.name(), &err.message);
                        }
                        err.message
                    }
                    Err(_) => "panicked".to_owned(),
                };
                self.run
                    .emit(LoopEvent::HookFailed {
                        hook: hook.name().to_owned(),
                        point: "post_tool_use".into(),
                        message,
                    })
                    .await;
            }
            Ok(if replaced {
                PostHookAction::Replace(output)
            } else {
                PostHookAction::Keep
            })
        })
    }
}
