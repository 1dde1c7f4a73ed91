//! A `tracing` subscriber for tests: collects the events it sees as lines.

use std::fmt;
use std::sync::{Arc, Mutex};

/// Collects each event as a line: its level, its message, then its other
/// fields as ` name=value` in the order they were recorded.
#[derive(Default, Clone)]
pub(crate) struct Capture(Arc<Mutex<Vec<String>>>);

impl Capture {
    /// The lines collected so far.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        #[derive(Default)]
        struct Line {
            message: String,
            fields: String,
        }
        impl tracing::field::Visit for Line {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
                if field.name() == "message" {
                    self.message = format!("{value:?}");
                } else {
                    self.fields += &format!(" {}={value:?}", field.name());
                }
            }
        }
        let mut line = Line::default();
        event.record(&mut line);
        let level = event.metadata().level();
        let text = format!("{level} {}{}", line.message, line.fields);
        self.0.lock().unwrap().push(text);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
