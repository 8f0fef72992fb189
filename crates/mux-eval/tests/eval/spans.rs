//! Each attempt runs in an `eval_case` span carrying the dataset, the case, the attempt and
//! how it went, for OpenTelemetry backends.

use std::sync::{Arc, Mutex};

use mux_eval::{Case, Dataset, Runner};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

use crate::support::agent;

/// One span's fields, as (name, value) in the order recorded.
type SpanFields = Vec<(String, String)>;

/// Collects the fields of every span, by span.
#[derive(Clone, Default)]
struct Spans {
    fields: Arc<Mutex<Vec<SpanFields>>>,
}

struct Fields<'a>(&'a mut SpanFields);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
}

impl Subscriber for Spans {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut spans = self.fields.lock().unwrap();
        let mut fields = vec![("name".to_owned(), span.metadata().name().to_owned())];
        span.record(&mut Fields(&mut fields));
        spans.push(fields);
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, id: &Id, values: &Record<'_>) {
        let mut spans = self.fields.lock().unwrap();
        if let Some(fields) = spans.get_mut(id.into_u64() as usize - 1) {
            values.record(&mut Fields(fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn every_attempt_has_a_span_with_its_verdict() {
    let spans = Spans::default();
    let seen = spans.clone();
    tracing::subscriber::with_default(spans, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let dataset = Dataset::new("traced")
                .case(Case::new("good", "say yes").expect_output("yes"))
                .case(Case::new("bad", "say no").expect_output("yes"));
            Runner::new(agent()).repeats(2).run(&dataset).await.unwrap();
        });
    });
    let spans = seen.fields.lock().unwrap();
    let cases: Vec<&SpanFields> = spans
        .iter()
        .filter(|f| f.iter().any(|(k, v)| k == "name" && v == "eval_case"))
        .collect();
    assert_eq!(cases.len(), 4);
    let get = |fields: &SpanFields, key: &str| {
        fields
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    for fields in cases {
        assert_eq!(get(fields, "eval.dataset").as_deref(), Some("traced"));
        let case = get(fields, "eval.case").unwrap();
        let passed = get(fields, "eval.passed").unwrap();
        assert_eq!(
            passed,
            if case == "good" { "true" } else { "false" },
            "{fields:?}"
        );
        assert!(get(fields, "eval.attempt").is_some() && get(fields, "eval.score").is_some());
    }
}
