//! `#[shed]` fns as users write them, run on the paused clock with a
//! limiter of their own per test.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use shed::{shed, ClassSpec, Config, Limiter, Reason, Rejected};

static BODY_RUNS: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug)]
enum AppError {
    Shed(Rejected),
}

impl From<Rejected> for AppError {
    fn from(r: Rejected) -> Self {
        AppError::Shed(r)
    }
}

/// The handler the tests use: counts how often its body runs.
#[shed(class = "background", max_wait = "5ms", weight = 3)]
async fn report(hold: Duration) -> Result<&'static str, AppError> {
    BODY_RUNS.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(hold).await;
    Ok("report")
}

#[shed]
async fn defaults() -> Result<u8, Rejected> {
    Ok(1)
}

#[shed(class = "critical", name = "checkout::pay")]
async fn pay(amount: u64) -> Result<u64, Rejected> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    Ok(amount)
}

#[shed(class = "critical")]
async fn explodes() -> Result<(), Rejected> {
    tokio::task::yield_now().await;
    panic!("handler bug");
}

struct Orders {
    placed: AtomicUsize,
}

impl Orders {
    #[shed(class = "optional", weight = 2)]
    async fn place(&self, n: usize) -> Result<usize, Rejected> {
        Ok(self.placed.fetch_add(n, Ordering::SeqCst) + n)
    }
}

impl Orders {
    #[shed(class = "optional")]
    async fn get() -> Result<&'static str, Rejected> {
        Ok("order")
    }
}

struct Users;

impl Users {
    /// The same fn name as `Orders::get`, in the same module.
    #[shed(class = "optional")]
    async fn get() -> Result<&'static str, Rejected> {
        Ok("user")
    }
}

trait Store {
    async fn load(&self, key: &str) -> Result<String, Rejected>;
}

impl Store for Orders {
    #[shed(class = "optional", name = "orders::load")]
    async fn load(&self, key: &str) -> Result<String, Rejected> {
        Ok(key.to_uppercase())
    }
}

fn limiter(capacity: u32) -> Limiter {
    Config::new()
        .capacity(capacity)
        .service_time_sampling(1)
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn admitted_calls_run_and_give_their_slots_back() {
    let limiter = limiter(8);
    let out = limiter
        .scope(report(Duration::from_millis(1)))
        .await
        .unwrap();
    assert_eq!(out, "report");
    assert_eq!(limiter.in_flight(), 0);
    assert_eq!(limiter.stats().class("background").unwrap().admitted, 1);
    let orders = Orders {
        placed: AtomicUsize::new(0),
    };
    assert_eq!(limiter.scope(orders.place(2)).await.unwrap(), 2);
    assert_eq!(limiter.scope(orders.load("ab")).await.unwrap(), "AB");
    assert_eq!(limiter.scope(defaults()).await.unwrap(), 1);
}

#[tokio::test(start_paused = true)]
async fn refused_calls_return_the_rejection_and_never_run_their_body() {
    let limiter = limiter(4);
    limiter.set_class_enabled("background", false).unwrap();
    let before = BODY_RUNS.load(Ordering::SeqCst);
    let refused = limiter.scope(report(Duration::ZERO)).await.unwrap_err();
    let AppError::Shed(refused) = refused;
    assert_eq!(refused.reason(), Reason::Disabled);
    assert_eq!(refused.class(), "background");
    assert_eq!(refused.name(), "suite::attribute::report");
    assert_eq!(
        BODY_RUNS.load(Ordering::SeqCst),
        before,
        "the body must not run"
    );
}

#[tokio::test(start_paused = true)]
async fn the_attribute_budget_applies_to_queue_wait() {
    // Capacity 3: one report holds every slot; the next waits its 5 ms and is refused.
    let limiter = Config::new()
        .capacity(3)
        .class(ClassSpec::new("background", 2).share(1.0))
        .build()
        .unwrap();
    let first = tokio::spawn(limiter.scope(report(Duration::from_millis(50))));
    tokio::task::yield_now().await;
    let started = tokio::time::Instant::now();
    let AppError::Shed(refused) = limiter.scope(report(Duration::ZERO)).await.unwrap_err();
    assert_eq!(refused.reason(), Reason::MaxWait);
    assert_eq!(started.elapsed(), Duration::from_millis(5));
    assert_eq!(first.await.unwrap().unwrap(), "report");
    assert_eq!(limiter.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn deadlines_learned_from_service_times_refuse_calls_that_cannot_finish() {
    let limiter = limiter(4);
    // Teach the limiter that `pay` takes 20 ms.
    for _ in 0..3 {
        limiter.scope(pay(1)).await.unwrap();
    }
    let policy = shed::policies().get("checkout::pay").unwrap();
    assert_eq!(
        limiter.expected_service(policy),
        Some(Duration::from_millis(20))
    );
    let refused = limiter
        .scope(shed::with_deadline_in(Duration::from_millis(10), pay(2)))
        .await
        .unwrap_err();
    assert_eq!(refused.reason(), Reason::Deadline);
    let paid = limiter
        .scope(shed::with_deadline_in(Duration::from_millis(50), async {
            // Nested calls inherit the caller's deadline.
            tokio::time::sleep(Duration::from_millis(40)).await;
            pay(3).await
        }))
        .await;
    assert_eq!(
        paid.unwrap_err().reason(),
        Reason::Deadline,
        "10 ms left of 50"
    );
    let in_time = limiter
        .scope(shed::with_deadline_in(Duration::from_millis(50), pay(4)))
        .await;
    assert!(in_time.is_ok());
    let critical = limiter.stats().class("critical").unwrap().clone();
    assert_eq!(
        (critical.served_in_time, critical.late),
        (1, 0),
        "calls with a deadline are counted when they end"
    );
}

#[tokio::test(start_paused = true)]
async fn limiter_and_deadline_scopes_compose_in_either_order() {
    // Regression: a scope built outside another but polled inside it must
    // keep what the outer one set.
    let limiter = limiter(4);
    for _ in 0..3 {
        limiter.scope(pay(1)).await.unwrap();
    }
    let refused = limiter
        .scope(shed::with_deadline_in(Duration::from_millis(10), pay(2)))
        .await
        .unwrap_err();
    assert_eq!(refused.reason(), Reason::Deadline);
    let refused = shed::with_deadline_in(Duration::from_millis(10), limiter.scope(pay(2)))
        .await
        .unwrap_err();
    assert_eq!(refused.reason(), Reason::Deadline);
    let stats = limiter.stats();
    assert_eq!(
        stats
            .class("critical")
            .unwrap()
            .refused_for(Reason::Deadline),
        2,
        "both on the scoped limiter"
    );
    assert_eq!(
        Limiter::global()
            .stats()
            .class("critical")
            .unwrap()
            .admitted,
        0
    );
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_gives_its_slot_back() {
    let limiter = limiter(1);
    let task = tokio::spawn(limiter.scope(explodes()));
    assert!(task.await.unwrap_err().is_panic());
    assert_eq!(limiter.in_flight(), 0);
    assert!(limiter.scope(defaults()).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn dropping_a_handler_mid_body_gives_its_slots_back() {
    let limiter = limiter(5); // background's share of 5 is 3
    let running = tokio::spawn(limiter.scope(report(Duration::from_secs(60))));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(limiter.in_flight(), 3);
    running.abort();
    let _ = running.await;
    assert_eq!(limiter.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn handlers_share_one_limiter_across_tasks() {
    let limiter = limiter(4);
    let orders = Arc::new(Orders {
        placed: AtomicUsize::new(0),
    });
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let orders = orders.clone();
            tokio::spawn(limiter.scope(async move { orders.place(1).await }))
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(orders.placed.load(Ordering::SeqCst), 10);
    assert_eq!(limiter.stats().class("optional").unwrap().admitted, 10);
}

#[test]
fn the_table_holds_every_annotated_fn_with_its_attribute() {
    let table = shed::policies();
    let report = table.get("suite::attribute::report").expect("free fn");
    assert_eq!(report.class(), "background");
    assert_eq!(report.max_wait(), Some(Duration::from_millis(5)));
    assert_eq!(report.weight(), 3);
    assert_eq!(report.file(), "tests/suite/attribute.rs");
    assert_eq!(report.line(), 25);

    let defaults = table.get("suite::attribute::defaults").expect("defaults");
    assert_eq!(
        (defaults.class(), defaults.max_wait(), defaults.weight()),
        ("critical", None, 1)
    );

    let place = table
        .get("suite::attribute::Orders::place")
        .expect("method in an impl block, named with its type");
    assert_eq!((place.class(), place.weight()), ("optional", 2));
    assert!(
        table.get("orders::load").is_some(),
        "method of a trait impl"
    );
    assert!(table.get("checkout::pay").is_some(), "explicit name");

    let names: Vec<_> = table.iter().map(|p| p.name()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "stable order");
}

#[test]
fn handlers_of_a_linked_crate_are_in_the_table() {
    // Linking the crate is what registers its handlers; calling them is not needed.
    use remote_handlers as _;
    let table = shed::policies();
    let fetch = table
        .get("remote_handlers::fetch_profile")
        .expect("cross-crate fn");
    assert_eq!(fetch.class(), "optional");
    assert!(
        fetch.file().ends_with("remote-handlers/src/lib.rs"),
        "{}",
        fetch.file()
    );
    assert!(
        table.get("remote::never_called").is_some(),
        "never called, still registered"
    );
}

#[test]
fn the_table_renders_as_text_and_json() {
    let table = shed::policies();
    let text = table.to_string();
    let header = text.lines().next().unwrap();
    assert!(header.starts_with("NAME"), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("suite::attribute::report "))
        .expect("a row per fn");
    assert!(line.contains("background"), "{line}");
    assert!(line.contains("5ms"), "{line}");
    assert!(line.ends_with("tests/suite/attribute.rs:25"), "{line}");
    // Columns line up: every row has its class at the header's CLASS column.
    let class_col = header.find("CLASS").unwrap();
    let row_class = line.find("background").unwrap();
    assert_eq!(class_col, row_class, "{text}");

    let json = table.to_json();
    let report = json
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "suite::attribute::report")
        .unwrap();
    assert_eq!(
        report,
        &serde_json::json!({
            "name": "suite::attribute::report", "class": "background", "max_wait": "5ms",
            "weight": 3, "file": "tests/suite/attribute.rs", "line": 25
        })
    );
}

#[shed(
    class = "optional",
    max_wait = "5ms",
    weight = 2,
    name = "equivalence::annotated"
)]
async fn annotated(hold: Duration) -> Result<(), Rejected> {
    tokio::time::sleep(hold).await;
    Ok(())
}

/// The lab drives `shed::run_guarded` with run-time policies; it must
/// decide exactly as the attribute does.
#[tokio::test(start_paused = true)]
async fn run_guarded_decides_exactly_as_the_attribute() {
    let policy = shed::Policy::leak(
        "equivalence::guarded",
        "optional",
        Some(Duration::from_millis(5)),
        2,
    );
    let outcomes = |use_attribute: bool| async move {
        let limiter = limiter(5);
        let mut calls = Vec::new();
        for i in 0..40u64 {
            let hold = Duration::from_millis(1 + i % 7);
            let call = if use_attribute {
                tokio::spawn(limiter.scope(annotated(hold)))
            } else {
                // The work starts when admitted, as the attribute's body does.
                let work = async move { tokio::time::sleep(hold).await };
                tokio::spawn(limiter.scope(async move { shed::run_guarded(policy, work).await }))
            };
            calls.push(call);
            tokio::time::sleep(Duration::from_micros(700)).await;
        }
        let mut results = Vec::new();
        for call in calls {
            results.push(call.await.unwrap().err().map(|r| r.reason()));
        }
        (results, limiter.stats().class("optional").unwrap().clone())
    };
    let (by_attribute, attribute_stats) = outcomes(true).await;
    let (by_run_guarded, run_guarded_stats) = outcomes(false).await;
    assert_eq!(by_attribute, by_run_guarded);
    assert!(
        by_attribute.iter().any(Option::is_some),
        "some calls were refused"
    );
    assert_eq!(attribute_stats.admitted, run_guarded_stats.admitted);
    assert_eq!(attribute_stats.refused, run_guarded_stats.refused);
}

#[test]
fn methods_of_two_types_with_one_name_get_distinct_default_names() {
    let table = shed::policies();
    let orders = table
        .get("suite::attribute::Orders::get")
        .expect("Orders::get");
    let users = table
        .get("suite::attribute::Users::get")
        .expect("Users::get");
    assert_ne!(orders.line(), users.line());
    let both = shed::PolicyTable::from_policies([orders, users]);
    assert!(Config::new().check_against(&both).is_ok());
}

#[tokio::test(start_paused = true)]
async fn methods_of_two_types_with_one_name_both_run() {
    let limiter = limiter(4);
    assert_eq!(limiter.scope(Orders::get()).await.unwrap(), "order");
    assert_eq!(limiter.scope(Users::get()).await.unwrap(), "user");
    assert_eq!(limiter.stats().class("optional").unwrap().admitted, 2);
}

/// The weight the two stacking tests hold, unusual enough to be theirs.
const STACKED_WEIGHT: u64 = 37;

/// Whether the test body runs registered and holding its slots.
fn assert_guarded(name: &str) {
    let policy = shed::policies().get(name).expect("registered");
    assert_eq!(u64::from(policy.weight()), STACKED_WEIGHT);
    assert!(
        Limiter::current().in_flight() >= STACKED_WEIGHT,
        "the body runs holding its slots"
    );
}

#[shed(weight = 37)]
#[tokio::test]
async fn shed_above_tokio_test_guards_the_test_body() -> Result<(), Rejected> {
    assert_guarded("suite::attribute::shed_above_tokio_test_guards_the_test_body");
    Ok(())
}

#[tokio::test]
#[shed(weight = 37)]
async fn shed_below_tokio_test_guards_the_test_body() -> Result<(), Rejected> {
    assert_guarded("suite::attribute::shed_below_tokio_test_guards_the_test_body");
    Ok(())
}
