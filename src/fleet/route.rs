//! Which pod serves a lookup.
//!
//! Replicated routes spread *requests* over identical pods, as a load balancer does: every lookup of one
//! request goes to the same pod. A request is a batch (the commands a connection sent before waiting for
//! replies: one prediction request of the service) when the trace knows batches, else a command (the trace's
//! `req`), else a lookup. `random` picks the pod by a seeded hash of the request, `round-robin` takes the pods
//! in turn. Sharded routes go by lookup: each lookup to its owner, so one batch may reach several pods. The sharded route `entity` gives every entity
//! (the Redis key) one owner pod by jump consistent hashing (Lamping and Veach, "A Fast, Minimal Memory,
//! Consistent Hash Algorithm", 2014), so a lookup goes to its entity's owner and going from N to N + 1 pods
//! moves about 1 / (N + 1) of the entities. `key-pattern` does the same with an application id taken from
//! each key (`pattern.rs`): every entity of one merchant, say, on one pod. `client` gives every client host of the trace a pod of its own:
//! each service host's cache sees exactly the lookups that host made.

use crate::hash::{mix64, KeyMap};
use crate::sim::events::Events;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Random { seed: u64 },
    RoundRobin,
    Entity,
    Client,
    /// Sharded by the id a key pattern takes from each key (the events' `shards` column).
    KeyPattern,
}

impl Route {
    pub fn parse(name: &str, seed: u64) -> Result<Route, String> {
        match name {
            "random" => Ok(Route::Random { seed }),
            "round-robin" => Ok(Route::RoundRobin),
            "entity" => Ok(Route::Entity),
            "client" => Ok(Route::Client),
            "key-pattern" => Ok(Route::KeyPattern),
            other => Err(format!("unknown route {other:?}; use random, round-robin, entity, key-pattern or client")),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Route::Random { .. } => "random",
            Route::RoundRobin => "round-robin",
            Route::Entity => "entity",
            Route::Client => "client",
            Route::KeyPattern => "key-pattern",
        }
    }
}

/// Routes the events of a stream, keeping the state a route needs between batches.
pub struct Router {
    pub route: Route,
    pods: u32,
    /// Each connection's request being routed, and its pod (round-robin).
    open: KeyMap<(u64, u32)>,
    next_pod: u32,
    /// Requests without an index (each lookup its own): a running count stands in.
    unnumbered: u64,
}

impl Router {
    pub fn new(route: Route, pods: u32) -> Router {
        Router { route, pods, open: KeyMap::default(), next_pod: 0, unnumbered: 0 }
    }

    /// The pod of read `i`. Under `client` it is the client's index, whatever the number of pods so far.
    #[inline]
    pub fn pod(&mut self, ev: &Events, i: usize) -> u32 {
        if self.route == Route::Client {
            return ev.client(i).expect("routing by client needs the clients column");
        }
        if self.pods == 1 {
            return 0;
        }
        match self.route {
            Route::Entity => jump_hash(mix64(ev.entity(i)), self.pods),
            Route::KeyPattern => jump_hash(mix64(ev.shard(i).expect("the key-pattern route needs the shards column")), self.pods),
            Route::Random { seed } => {
                let request = match self.request(ev, i) {
                    (u64::MAX, r) => r,
                    (conn, batch) => mix64(conn).wrapping_add(batch),
                };
                (mix64(request ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)) % u64::from(self.pods)) as u32
            }
            _ => {
                let (conn, request) = self.request(ev, i);
                if let Some(&(r, pod)) = self.open.get(&conn) {
                    if r == request {
                        return pod;
                    }
                }
                let pod = self.next_pod;
                self.next_pod = (self.next_pod + 1) % self.pods;
                self.open.insert(conn, (request, pod));
                pod
            }
        }
    }
}

impl Router {
    /// The request of read `i` as (connection, request on it): its batch, else its command (connection
    /// `u64::MAX`), else a running count (each lookup a request of its own).
    fn request(&mut self, ev: &Events, i: usize) -> (u64, u64) {
        ev.batch(i).or_else(|| ev.req(i).map(|r| (u64::MAX, r))).unwrap_or_else(|| {
            self.unnumbered += 1;
            (u64::MAX, self.unnumbered)
        })
    }
}

/// Jump consistent hash: the bucket of `key` among `buckets`, moving only 1 / n of the keys when a bucket is
/// added.
pub fn jump_hash(mut key: u64, buckets: u32) -> u32 {
    let (mut b, mut j) = (-1i64, 0i64);
    while j < i64::from(buckets) {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jump_hash_moves_about_one_in_n_plus_one_keys() {
        let keys: Vec<u64> = (0..100_000u64).map(mix64).collect();
        let moved = keys.iter().filter(|&&k| jump_hash(k, 16) != jump_hash(k, 17)).count();
        let share = moved as f64 / keys.len() as f64;
        assert!((share - 1.0 / 17.0).abs() < 0.005, "{share}");
        let mut load = [0u32; 16];
        keys.iter().for_each(|&k| load[jump_hash(k, 16) as usize] += 1);
        assert!(load.iter().all(|&l| (5_600..6_900).contains(&l)), "{load:?}");
    }
}
