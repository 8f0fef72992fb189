//! Every decision is visible as a `tracing` event with its rule and scope.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use mux_permission::{PathContext, Permissions, RuleSet, Scope, ScopeRules, builtin};
use mux_tool::Subject;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

type Events = Arc<Mutex<Vec<BTreeMap<String, String>>>>;

/// Keeps the fields of every event.
struct Collect(Events);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Subscriber for Collect {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = BTreeMap::new();
        fields.insert("target".to_owned(), event.metadata().target().to_owned());
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(fields);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn each_check_emits_an_event_with_rule_and_scope() {
    let events: Events = Arc::default();
    let subscriber = Collect(events.clone());
    let agent = ScopeRules::new(RuleSet::new().with_deny("Bash(rm:*)").unwrap());
    let permissions = Permissions::builder(PathContext::new("/"))
        .scope(Scope::Agent, agent)
        .build();
    let bash = builtin::spec("Bash").unwrap();
    tracing::subscriber::with_default(subscriber, || {
        permissions.check(&bash, &Subject::command("ls; rm -rf /"));
        permissions.check(&bash, &Subject::command("ls"));
    });
    let events = events.lock().unwrap();
    let decisions: Vec<_> = events
        .iter()
        .filter(|e| e.get("message").is_some_and(|m| m == "permission verdict"))
        .collect();
    assert_eq!(decisions.len(), 2, "{events:?}");
    assert_eq!(decisions[0]["target"], "mux_permission");
    assert_eq!(decisions[0]["tool"], "Bash");
    assert_eq!(decisions[0]["verdict"], "deny");
    assert_eq!(decisions[0]["rule"], "Bash(rm:*)");
    assert_eq!(decisions[0]["scope"], "agent");
    assert_eq!(decisions[1]["verdict"], "ask");
    assert_eq!(decisions[1]["rule"], "");
}
