//! One value per header, the JSON `Content-Type`, and header values shown in messages.

use http::{HeaderMap, HeaderName, HeaderValue, header};

use crate::Refused;

/// The header's only value; two values of one header are refused (which one a proxy would
/// read is anyone's guess).
pub fn single<'a>(
    headers: &'a HeaderMap,
    name: &HeaderName,
) -> Result<Option<&'a HeaderValue>, Refused> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(Refused::DuplicateHeader(name.clone()));
    }
    Ok(first)
}

/// Whether a `Content-Type` value is `application/json`, parameters allowed
/// (`application/json; charset=utf-8`), in any case.
pub fn is_json(value: &[u8]) -> bool {
    let essence = value.split(|&b| b == b';').next().unwrap_or_default();
    essence
        .trim_ascii()
        .eq_ignore_ascii_case(b"application/json")
}

/// A JSON `Content-Type`, as every `POST` needs: no CORS-simple `text/plain` or form body a
/// page could send without a preflight.
pub fn require_json(headers: &HeaderMap) -> Result<(), Refused> {
    let content_type = single(headers, &header::CONTENT_TYPE)?;
    if content_type.is_some_and(|v| is_json(v.as_bytes())) {
        return Ok(());
    }
    let given = content_type.map_or_else(|| "none".to_owned(), |v| shown(v.as_bytes()));
    Err(Refused::NotJson(given))
}

/// At most 120 characters of a header value, for messages.
pub fn shown(value: &[u8]) -> String {
    String::from_utf8_lossy(value).chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_application_json_is_json() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            " application/json ;charset=UTF-8",
        ] {
            assert!(is_json(ok.as_bytes()), "{ok}");
        }
        for refused in [
            "text/plain",
            "application/jsonx",
            "application/json+x",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "",
            "application/ json",
            "text/plain; application/json",
        ] {
            assert!(!is_json(refused.as_bytes()), "{refused}");
        }
    }

    #[test]
    fn a_post_needs_one_json_content_type() {
        let mut headers = HeaderMap::new();
        assert_eq!(require_json(&headers), Err(Refused::NotJson("none".into())));
        headers.append(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(
            require_json(&headers),
            Err(Refused::NotJson("text/plain".into()))
        );
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        assert_eq!(require_json(&headers), Ok(()));
        headers.append(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        assert_eq!(
            require_json(&headers),
            Err(Refused::DuplicateHeader(header::CONTENT_TYPE))
        );
    }
}
