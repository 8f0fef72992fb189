//! One `mcpServers` entry as written, read by serde. Every field is optional and every value
//! may have the wrong type ([`Loose`]), so that validation (see `entry`) can name the field and
//! say what is wrong with it, instead of stopping at serde's first error.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde_json::{Map, Value};

/// A value as written: of the expected type, or of another one.
#[derive(Debug)]
pub(super) enum Loose<T> {
    /// The value has the expected type.
    Given(T),
    /// The value has another type.
    Wrong,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Loose<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(T::deserialize(value).map_or(Self::Wrong, Self::Given))
    }
}

/// A JSON object read as `T`; anything else, an array included, is refused.
#[derive(Debug)]
pub(super) struct Object<T>(pub(super) T);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = Map::<String, Value>::deserialize(deserializer)?;
        T::deserialize(Value::Object(object))
            .map(Self)
            .map_err(D::Error::custom)
    }
}

/// An optional string field.
pub(super) type Text = Option<Loose<String>>;
/// An optional array of strings.
pub(super) type Texts = Option<Loose<Vec<Loose<String>>>>;
/// An optional object of strings (`env`, `headers`).
pub(super) type TextMap = Option<Loose<BTreeMap<String, Loose<String>>>>;

/// One `mcpServers` entry: the standard fields (Claude Desktop, Cursor, VS Code) and mux's own.
/// Unknown fields are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawEntry {
    /// `disabled`: skip this server.
    pub(super) disabled: Option<Loose<bool>>,
    /// `type`: `stdio`, `http`, `streamable-http` or `streamableHttp`.
    #[serde(rename = "type")]
    pub(super) kind: Text,
    /// The stdio fields.
    #[serde(flatten)]
    pub(super) stdio: RawStdio,
    /// The HTTP fields.
    #[serde(flatten)]
    pub(super) http: RawHttp,
    /// `toolTimeoutMs`.
    pub(super) tool_timeout_ms: Option<Loose<u64>>,
    /// `connectTimeoutMs`.
    pub(super) connect_timeout_ms: Option<Loose<u64>>,
    /// `sandbox`: the OS wall around a stdio server (module `sandbox`).
    pub(super) sandbox: Option<Value>,
}

/// The fields of a stdio server.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawStdio {
    pub(super) command: Text,
    pub(super) args: Texts,
    pub(super) env: TextMap,
    pub(super) cwd: Text,
}

/// The fields of a Streamable HTTP server.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawHttp {
    pub(super) url: Text,
    pub(super) headers: TextMap,
    pub(super) bearer_token: Text,
    pub(super) oauth: Option<Loose<Object<RawOAuth>>>,
    pub(super) ca_certificates: Texts,
}

/// The `oauth` object of an HTTP server.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawOAuth {
    pub(super) grant: Text,
    pub(super) redirect_uri: Text,
    pub(super) scopes: Texts,
    pub(super) client_id: Text,
    pub(super) client_secret: Text,
    pub(super) private_key_file: Text,
    pub(super) signing_algorithm: Text,
    pub(super) client_metadata_url: Text,
    pub(super) client_name: Text,
    pub(super) token_store: Text,
}
