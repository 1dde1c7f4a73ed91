//! A request from a client with a retry policy (a scenario's `[clients]`
//! table): its attempts, each with the client's timeout, until one is
//! answered or the policy gives up.

use std::rc::Rc;

use tokio::sync::oneshot;
use tokio::time::Instant;

use super::Sim;
use crate::retries::{Admit, Event, Failure};

/// How one attempt ended, as its client sees it.
enum Outcome {
    /// Answered before the client's timeout.
    Answered,
    /// Refused by the server, with this `Retry-After`.
    Refused(std::time::Duration),
    /// The timeout passed first; the server carries on with it.
    TimedOut,
}

/// One request of `stream`'s client, retries included.
pub(super) async fn request(sim: Rc<Sim>, stream: usize) {
    let clients = sim.clients.as_ref().expect("requests run with clients");
    let client = &clients.streams[stream];
    let arrival = Instant::now();
    clients.count(Event::Request, arrival);
    let mut attempt = 1;
    let mut reservation = None;
    loop {
        match client.admit(attempt, reservation.take()) {
            Admit::Sent => {}
            Admit::Throttled => return clients.count(Event::Throttled, Instant::now()),
            Admit::Revoked => return clients.count(Event::Revoked, Instant::now()),
        }
        let sent = Instant::now();
        clients.count(
            if attempt == 1 {
                Event::First
            } else {
                Event::Retry
            },
            sent,
        );
        let failure = match send(&sim, stream, attempt).await {
            Outcome::Answered => {
                client.answered(true);
                clients.count(Event::Good, arrival);
                if attempt == 1 {
                    clients.count(Event::FirstGood, arrival);
                }
                return;
            }
            Outcome::Refused(retry_after) => {
                client.answered(false);
                clients.count(Event::Refused, sent);
                Failure::Refused(retry_after)
            }
            Outcome::TimedOut => {
                client.answered(false);
                Failure::TimedOut
            }
        };
        match client.retry_wait(attempt, failure) {
            Some((wait, granted)) => {
                reservation = granted;
                tokio::time::sleep(wait).await;
            }
            None => return,
        }
        attempt += 1;
    }
}

/// Sends attempt `attempt` (1 = the first), marked as such for the
/// server, and waits for its answer or the client's timeout. The server's
/// side is tallied like any call of the lab.
async fn send(sim: &Rc<Sim>, stream: usize, attempt: u32) -> Outcome {
    let arrival = Instant::now();
    let deadline = arrival + sim.scenario.traffic[stream].timeout.0;
    let counted = (sim.start..sim.window_end).contains(&arrival);
    if counted {
        sim.tallies[stream]
            .borrow_mut()
            .offer(attempt > 1, arrival - sim.start);
    }
    sim.outstanding.set(sim.outstanding.get() + 1);
    let (answer, answered) = oneshot::channel();
    let server = sim.clone();
    tokio::task::spawn_local(async move {
        let sim = server;
        let outcome = shed::with_attempt(attempt, sim.serve(stream, arrival, deadline, None)).await;
        let done = Instant::now();
        sim.outstanding.set(sim.outstanding.get() - 1);
        let reply = match outcome {
            Ok(()) => {
                if counted {
                    sim.tallies[stream].borrow_mut().served(
                        done - arrival,
                        done <= deadline,
                        arrival - sim.start,
                    );
                }
                Outcome::Answered
            }
            Err(refusal) => {
                if counted {
                    sim.tallies[stream].borrow_mut().shed(&refusal.reason);
                }
                Outcome::Refused(refusal.retry_after)
            }
        };
        // Gone if the client timed out first.
        let _ = answer.send(reply);
    });
    match tokio::time::timeout_at(deadline, answered).await {
        Ok(Ok(outcome)) => outcome,
        _ => Outcome::TimedOut,
    }
}
