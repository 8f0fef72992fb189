//! Client assertions for `private_key_jwt` (RFC 7523 §2.2, as SEP-1046 uses it): a JWT the
//! client signs with its private key to authenticate at the token endpoint, signed with
//! `ring` (the TLS provider mux already builds).

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, RsaKeyPair};
use rustls::pki_types::PrivatePkcs8KeyDer;
use rustls::pki_types::pem::PemObject;

use super::spec::{JwtAlgorithm, PrivateKeyJwt};

/// How long an assertion is valid.
const LIFETIME_SECS: u64 = 300;

impl JwtAlgorithm {
    fn name(self) -> &'static str {
        match self {
            Self::ES256 => "ES256",
            Self::ES384 => "ES384",
            Self::RS256 => "RS256",
        }
    }
}

/// A signed assertion naming `client_id` as issuer and subject, for `audience` (the
/// authorization server's issuer). Errors describe the key's problem, never its content.
pub(crate) fn assertion(
    key: &PrivateKeyJwt,
    client_id: &str,
    audience: &str,
) -> Result<String, String> {
    let rng = SystemRandom::new();
    let der = PrivatePkcs8KeyDer::from_pem_slice(key.key_pem.expose().as_bytes())
        .map_err(|_| "the client's private key is not a PEM PKCS#8 private key".to_string())?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| "the system clock is before 1970".to_string())?
        .as_secs();
    let mut jti = [0u8; 16];
    rng.fill(&mut jti)
        .map_err(|_| "no randomness for the assertion id".to_string())?;
    let header = serde_json::json!({"alg": key.algorithm.name(), "typ": "JWT"});
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + LIFETIME_SECS,
        "jti": URL_SAFE_NO_PAD.encode(jti),
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = sign(key.algorithm, der.secret_pkcs8_der(), &signing_input, &rng)?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

fn sign(
    algorithm: JwtAlgorithm,
    pkcs8: &[u8],
    message: &str,
    rng: &SystemRandom,
) -> Result<Vec<u8>, String> {
    let unusable = || format!("the client's private key is not a {} key", algorithm.name());
    let failed = || "signing the client assertion failed".to_string();
    let ecdsa = |alg: &'static signature::EcdsaSigningAlgorithm| {
        let pair = EcdsaKeyPair::from_pkcs8(alg, pkcs8, rng).map_err(|_| unusable())?;
        pair.sign(rng, message.as_bytes())
            .map(|sig| sig.as_ref().to_vec())
            .map_err(|_| failed())
    };
    match algorithm {
        JwtAlgorithm::ES256 => ecdsa(&signature::ECDSA_P256_SHA256_FIXED_SIGNING),
        JwtAlgorithm::ES384 => ecdsa(&signature::ECDSA_P384_SHA384_FIXED_SIGNING),
        JwtAlgorithm::RS256 => {
            let pair = RsaKeyPair::from_pkcs8(pkcs8).map_err(|_| unusable())?;
            let mut sig = vec![0u8; pair.public().modulus_len()];
            pair.sign(
                &signature::RSA_PKCS1_SHA256,
                rng,
                message.as_bytes(),
                &mut sig,
            )
            .map_err(|_| failed())?;
            Ok(sig)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mux_tool::Secret;
    use ring::signature::KeyPair;

    fn es256_pem() -> (String, Vec<u8>) {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            doc.as_ref(),
            &rng,
        )
        .unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(doc.as_ref());
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n");
        (pem, pair.public_key().as_ref().to_vec())
    }

    #[test]
    fn an_es256_assertion_verifies_and_names_the_client() {
        let (pem, public) = es256_pem();
        let key = PrivateKeyJwt::new(Secret::new(pem), JwtAlgorithm::ES256);
        let jwt = assertion(&key, "bot", "https://as.example").unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "bot");
        assert_eq!(claims["sub"], "bot");
        assert_eq!(claims["aud"], "https://as.example");
        let signed = format!("{}.{}", parts[0], parts[1]);
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, public)
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .unwrap();
    }

    #[test]
    fn a_bad_key_is_an_error_without_its_content() {
        let key = PrivateKeyJwt::new(Secret::new("not-a-key-sekrit"), JwtAlgorithm::ES256);
        let err = assertion(&key, "bot", "aud").unwrap_err();
        assert!(!err.contains("sekrit"), "{err}");
        let (pem, _) = es256_pem();
        let key = PrivateKeyJwt::new(Secret::new(pem), JwtAlgorithm::RS256);
        let err = assertion(&key, "bot", "aud").unwrap_err();
        assert!(err.contains("RS256"), "{err}");
    }
}
