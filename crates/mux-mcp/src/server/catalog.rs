//! Resources, prompts and completions a server offers besides its tools.

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptResult, InputRequests, InputResponses, Prompt,
    Resource, ResourceContents, ResourceTemplate,
};
use serde_json::{Map, Value};

/// Why a catalog lookup failed; the server sends it as a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    /// No resource at this URI (`-32602`, with the URI in the error data).
    #[error("resource not found: {uri}")]
    ResourceNotFound {
        /// The URI asked for.
        uri: String,
    },
    /// No prompt by this name.
    #[error("prompt not found: {name}")]
    PromptNotFound {
        /// The name asked for.
        name: String,
    },
    /// The arguments do not fit.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
}

/// What a server offers besides tools. Every method has an empty default, so a catalog
/// implements only what it serves; the server declares the `resources`, `prompts` and
/// `completions` capabilities from [`Catalog::offers`].
pub trait Catalog: Send + Sync + 'static {
    /// Which of resources, prompts and completions to declare.
    fn offers(&self) -> Offers;

    /// The resources, in a stable order.
    fn resources(&self) -> Vec<Resource> {
        Vec::new()
    }

    /// The resource templates.
    fn resource_templates(&self) -> Vec<ResourceTemplate> {
        Vec::new()
    }

    /// The contents at `uri`.
    fn read(&self, uri: &str) -> Result<Vec<ResourceContents>, CatalogError> {
        Err(CatalogError::ResourceNotFound {
            uri: uri.to_string(),
        })
    }

    /// The prompts.
    fn prompts(&self) -> Vec<Prompt> {
        Vec::new()
    }

    /// The prompt `name` with `arguments`.
    fn prompt(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
    ) -> Result<GetPromptResult, CatalogError> {
        let _ = arguments;
        Err(CatalogError::PromptNotFound {
            name: name.to_string(),
        })
    }

    /// The prompt `name` with `arguments`, given the client's answers (`inputs`, by key) to
    /// questions this prompt asked before; empty on the first request. Return
    /// [`PromptOutcome::NeedsInput`] to ask first: a 2026-07-28 client gets the questions as
    /// an `input_required` result and sends `prompts/get` again with its answers; a session
    /// client is asked over its session and the catalog is called again. A client that did
    /// not declare a question's capability gets `-32021`. Answers are the client's word:
    /// check them like any input. Default: [`prompt`](Self::prompt), asking nothing.
    fn prompt_with_inputs(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        inputs: &InputResponses,
    ) -> Result<PromptOutcome, CatalogError> {
        let _ = inputs;
        self.prompt(name, arguments).map(PromptOutcome::Ready)
    }

    /// Completions for a prompt or template argument.
    fn complete(&self, request: &CompleteRequestParams) -> CompleteResult {
        let _ = request;
        CompleteResult::default()
    }
}

/// What [`Catalog::prompt_with_inputs`] returns: the prompt, or questions to ask first.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PromptOutcome {
    /// The prompt.
    Ready(GetPromptResult),
    /// Ask the client these (keyed by names of the catalog's choosing), then call again.
    NeedsInput(InputRequests),
}

/// The capabilities a [`Catalog`] declares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offers {
    /// `resources` (list, read, templates; subscribe on sessions that have it).
    pub resources: bool,
    /// `prompts`.
    pub prompts: bool,
    /// `completions`.
    pub completions: bool,
}
