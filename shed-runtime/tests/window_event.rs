//! The default limit reports each window it closes as a `debug` event of
//! target `shed::adaptive`. In a test binary of its own: a subscriber set
//! for one thread misses events whose call site another test's thread
//! registered at the same moment with none, so this one is process-wide.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shed_runtime::Config;

#[tokio::test(start_paused = true)]
async fn each_closed_window_is_reported_with_what_it_read_and_the_limit_it_led_to() {
    // For an operator asking why the limit is where it is. Four callers
    // of a service of 100 ms share the initial 2 slots: the first
    // window, of 12 calls while calls waited, doubles the limit.
    let events = Events::default();
    tracing::subscriber::set_global_default(events.clone()).unwrap();
    let limiter = Config::new().build().unwrap();
    let callers: Vec<_> = (0..4)
        .map(|_| {
            let limiter = limiter.clone();
            tokio::spawn(async move {
                for _ in 0..1_000 {
                    if limiter.capacity() != 2 {
                        break;
                    }
                    match limiter.acquire("critical", 1, "call").await {
                        Ok(_permit) => tokio::time::sleep(Duration::from_millis(100)).await,
                        Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                    }
                }
            })
        })
        .collect();
    for caller in callers {
        caller.await.unwrap();
    }
    let windows = events.of_target("shed::adaptive");
    assert_eq!(windows.len(), 1, "one window closed: {windows:?}");
    for field in [
        "window closed since_start_ms=700 limit=2.0 next=4 probe=false calls=12 ",
        " mean_ms=100.0 shortest_ms=100.0 ",
        " waiting=true waiters=",
        " in_flight=2 cohort=12 cohort_mean_ms=100.0 ",
        " startup=true no_load_ms=",
    ] {
        assert!(windows[0].contains(field), "{field:?} in {}", windows[0]);
    }
    assert_eq!(limiter.capacity(), 4);
}

/// Each event seen, with its target: its message, then ` name=value` for
/// its other fields in the order they were recorded.
#[derive(Default, Clone)]
struct Events(Arc<Mutex<Vec<(String, String)>>>);

impl Events {
    fn of_target(&self, target: &str) -> Vec<String> {
        let events = self.0.lock().unwrap();
        let of_target = events.iter().filter(|(t, _)| t == target);
        of_target.map(|(_, line)| line.clone()).collect()
    }
}

impl tracing::Subscriber for Events {
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
        struct Line(String, String);
        impl tracing::field::Visit for Line {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
                match field.name() {
                    "message" => self.0 = format!("{value:?}"),
                    name => self.1 += &format!(" {name}={value:?}"),
                }
            }
        }
        let mut line = Line::default();
        event.record(&mut line);
        let target = event.metadata().target().to_owned();
        self.0.lock().unwrap().push((target, line.0 + &line.1));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
