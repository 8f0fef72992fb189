//! [`EventJson`]: an event as the JSON text a run store keeps.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

/// An event as JSON text, valid by construction (it is made by serializing a value), so a
/// store writes it as it is and parses nothing. Cloning shares the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventJson(Arc<str>);

impl EventJson {
    /// `value` serialized; fails only when its `Serialize` does (a map with keys that are not
    /// strings, a failing custom implementation).
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_string(value).map(|text| Self(text.into()))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The JSON text, shared with this value.
    pub fn shared(&self) -> Arc<str> {
        Arc::clone(&self.0)
    }

    /// `events` as the text of one JSON array.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn array(events: &[Self]) -> String {
        let len = events.iter().map(|e| e.0.len() + 1).sum::<usize>() + 2;
        let mut text = String::with_capacity(len);
        text.push('[');
        for (i, event) in events.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&event.0);
        }
        text.push(']');
        text
    }
}

impl From<&Value> for EventJson {
    fn from(value: &Value) -> Self {
        Self(value.to_string().into())
    }
}

impl From<Value> for EventJson {
    fn from(value: Value) -> Self {
        Self::from(&value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    fn an_array_of_events_is_their_texts_in_order_and_parses_back() {
        let events = [
            serde_json::json!({"a": 1}),
            serde_json::json!("two"),
            serde_json::json!([3]),
        ];
        let texts: Vec<EventJson> = events.iter().map(EventJson::from).collect();
        let array = EventJson::array(&texts);
        assert_eq!(array, r#"[{"a":1},"two",[3]]"#);
        assert_eq!(serde_json::from_str::<Vec<Value>>(&array).unwrap(), events);
        assert_eq!(EventJson::array(&[]), "[]");
    }

    #[test]
    fn a_value_that_cannot_be_json_is_an_error_not_text() {
        let keys: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
        assert!(EventJson::of(&keys).is_err());
        assert_eq!(EventJson::of("q\"").unwrap().as_str(), r#""q\"""#);
    }
}
