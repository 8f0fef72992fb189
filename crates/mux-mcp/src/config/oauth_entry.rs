//! From the raw `oauth` object of an HTTP entry to a validated [`OAuthSpec`].

use std::path::PathBuf;
use std::sync::Arc;

use super::error::ConfigError;
use super::fields::{Fields, is_http_url};
use super::raw::RawOAuth;
use crate::oauth::spec::{JwtAlgorithm, OAuthGrant, OAuthSpec, PrivateKeyJwt};
use crate::oauth::token_file::FileTokenStore;
use mux_tool::Secret;

impl Fields<'_> {
    /// The `oauth` object: `grant` (`authorization_code`, the default, or
    /// `client_credentials`), `redirectUri` (required by `authorization_code`), `scopes`,
    /// `clientId`, `clientSecret` (both required by `client_credentials`, unless
    /// `privateKeyFile` and `signingAlgorithm` select `private_key_jwt`),
    /// `clientMetadataUrl`, `clientName`, `tokenStore` (a directory for a [`FileTokenStore`]).
    pub(super) fn oauth(&self, raw: RawOAuth) -> Result<OAuthSpec, ConfigError> {
        let grant = match self.string("oauth.grant", raw.grant)?.as_deref() {
            None | Some("authorization_code") => OAuthGrant::AuthorizationCode,
            Some("client_credentials") => OAuthGrant::ClientCredentials,
            Some(other) => {
                return Err(self.error(
                    "oauth.grant",
                    format!("is `{other}`; expected `authorization_code` or `client_credentials`"),
                ));
            }
        };
        let redirect_uri = match (self.string("oauth.redirectUri", raw.redirect_uri)?, grant) {
            (Some(uri), _) => uri,
            (None, OAuthGrant::ClientCredentials) => String::new(),
            (None, _) => return Err(self.error("oauth.redirectUri", "is missing")),
        };
        if grant == OAuthGrant::AuthorizationCode && !is_http_url(&redirect_uri) {
            return Err(self.error("oauth.redirectUri", "must start with http:// or https://"));
        }
        let scopes = self.strings("oauth.scopes", raw.scopes, "must be an array of strings")?;
        let client_id = self.string("oauth.clientId", raw.client_id)?;
        let client_secret = self
            .string("oauth.clientSecret", raw.client_secret)?
            .map(Secret::new);
        if client_secret.is_some() && client_id.is_none() {
            return Err(self.error("oauth.clientSecret", "needs `oauth.clientId`"));
        }
        let key_file = self.string("oauth.privateKeyFile", raw.private_key_file)?;
        let algorithm = self.string("oauth.signingAlgorithm", raw.signing_algorithm)?;
        let client_key = self.client_key(key_file, algorithm)?;
        self.check_client(grant, client_id.is_some(), &client_secret, &client_key)?;
        let mut spec = OAuthSpec::new(redirect_uri).with_scopes(scopes);
        spec.grant = grant;
        spec.client_key = client_key;
        spec.client_id = client_id;
        spec.client_secret = client_secret;
        spec.client_metadata_url =
            self.string("oauth.clientMetadataUrl", raw.client_metadata_url)?;
        if let Some(name) = self.string("oauth.clientName", raw.client_name)? {
            spec.client_name = name;
        }
        if let Some(dir) = self.string("oauth.tokenStore", raw.token_store)? {
            spec = spec.with_token_store(Arc::new(self.token_dir(&dir)?));
        }
        Ok(spec)
    }

    /// The client-credentials grant needs `clientId` and one of `clientSecret` and
    /// `privateKeyFile`; the authorization-code grant takes no `privateKeyFile`.
    fn check_client(
        &self,
        grant: OAuthGrant,
        has_client_id: bool,
        secret: &Option<Secret>,
        key: &Option<PrivateKeyJwt>,
    ) -> Result<(), ConfigError> {
        if grant != OAuthGrant::ClientCredentials {
            return match key {
                Some(_) => Err(self.error(
                    "oauth.privateKeyFile",
                    "needs `\"grant\": \"client_credentials\"`",
                )),
                None => Ok(()),
            };
        }
        if !has_client_id {
            return Err(self.error(
                "oauth.clientId",
                "is required by the `client_credentials` grant",
            ));
        }
        match (secret, key) {
            (None, None) => Err(self.error(
                "oauth.clientSecret",
                "or `oauth.privateKeyFile` is required by the `client_credentials` grant",
            )),
            (Some(_), Some(_)) => Err(self.error(
                "oauth.privateKeyFile",
                "cannot be combined with `oauth.clientSecret`; set one of them",
            )),
            _ => Ok(()),
        }
    }

    /// `oauth.privateKeyFile` (read now; its content never appears in errors) and
    /// `oauth.signingAlgorithm` (`ES256`, the default, `ES384` or `RS256`).
    fn client_key(
        &self,
        file: Option<String>,
        algorithm: Option<String>,
    ) -> Result<Option<PrivateKeyJwt>, ConfigError> {
        let algorithm = match algorithm.as_deref() {
            None | Some("ES256") => JwtAlgorithm::ES256,
            Some("ES384") => JwtAlgorithm::ES384,
            Some("RS256") => JwtAlgorithm::RS256,
            Some(other) => {
                return Err(self.error(
                    "oauth.signingAlgorithm",
                    format!("is `{other}`; expected `ES256`, `ES384` or `RS256`"),
                ));
            }
        };
        let Some(file) = file else {
            return Ok(None);
        };
        let pem = std::fs::read_to_string(&file).map_err(|err| {
            self.error(
                "oauth.privateKeyFile",
                format!("cannot read `{file}`: {err}"),
            )
        })?;
        if !pem.contains("-----BEGIN PRIVATE KEY-----") {
            return Err(self.error(
                "oauth.privateKeyFile",
                format!("`{file}` holds no PEM PKCS#8 private key (`BEGIN PRIVATE KEY`)"),
            ));
        }
        Ok(Some(PrivateKeyJwt::new(Secret::new(pem), algorithm)))
    }

    /// `oauth.tokenStore`: a directory path, which need not exist yet but must not be a file.
    fn token_dir(&self, dir: &str) -> Result<FileTokenStore, ConfigError> {
        let field = "oauth.tokenStore";
        if dir.trim().is_empty() {
            return Err(self.error(field, "must be a directory path, not empty"));
        }
        let path = PathBuf::from(dir);
        match std::fs::metadata(&path) {
            Ok(meta) if !meta.is_dir() => Err(self.error(
                field,
                format!("names `{}`, which is not a directory", path.display()),
            )),
            _ => Ok(FileTokenStore::new(path)),
        }
    }
}
