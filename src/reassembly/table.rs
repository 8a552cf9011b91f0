//! The connection table: connections by 4-tuple, in a slab of slots, with the two orders that decide which
//! connection to forget first.
//!
//! Open connections sit on a recency list threaded through the slab (as in `policy/lru.rs`): a segment moves
//! its connection to the front, so the back is the one idle the longest, the first to time out or to be
//! evicted when the table is full. Closed connections (FIN both ways, RST) stay a short while as tombstones
//! that absorb their last ACKs; they leave the recency list and wait in a FIFO by closing time instead.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};

use super::stream::Stream;
use crate::hash::{mix64, BuildU64Hasher};

const NIL: u32 = u32::MAX;

/// A connection's identity: client and server endpoints. IPv4 pairs keep their 32-bit addresses; a pair with
/// any IPv6 side is flagged `v6` and holds 128-bit addresses (IPv4 ones mapped), so the two never collide.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct FlowKey {
    client_ip: u128,
    server_ip: u128,
    client_port: u16,
    server_port: u16,
    v6: bool,
}

impl FlowKey {
    #[inline]
    pub fn new(client: &SocketAddr, server: &SocketAddr) -> FlowKey {
        let (client_ip, server_ip, v6) = match (client, server) {
            (SocketAddr::V4(c), SocketAddr::V4(s)) => (u128::from(c.ip().to_bits()), u128::from(s.ip().to_bits()), false),
            _ => (ip_bits(client.ip()), ip_bits(server.ip()), true),
        };
        FlowKey { client_ip, server_ip, client_port: client.port(), server_port: server.port(), v6 }
    }
}

/// An address as 128 bits, IPv4 as IPv4-mapped IPv6 (only used when the key is flagged `v6`).
fn ip_bits(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().to_bits(),
        IpAddr::V6(v6) => v6.to_bits(),
    }
}

impl Hash for FlowKey {
    // One word to `U64Hasher` (which mixes it once more): the client side and the server side are folded
    // independently, so the two multiply chains run side by side instead of one after the other.
    fn hash<H: Hasher>(&self, h: &mut H) {
        let fold = |ip: u128| (ip as u64) ^ ((ip >> 64) as u64).rotate_left(32);
        let ports = u64::from(self.client_port) << 32 | u64::from(self.server_port) << 1 | u64::from(self.v6);
        h.write_u64(mix64(fold(self.client_ip) ^ ports) ^ fold(self.server_ip).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Open,
    /// Closed by FIN or RST; remembered until `closed_timeout_ns` has passed.
    Closed,
    /// An empty slot on the free list.
    Free,
}

pub(super) struct Conn {
    pub id: u32,
    pub key: FlowKey,
    /// Capture time of the last segment (of the close, for a closed connection).
    pub last_ts: i64,
    pub state: State,
    /// Request then reply.
    pub streams: [Stream; 2],
    prev: u32,
    next: u32,
}

impl Conn {
    pub fn new(id: u32, key: FlowKey, ts_ns: i64, overlap_window: u32) -> Conn {
        Conn {
            id,
            key,
            last_ts: ts_ns,
            state: State::Open,
            streams: [Stream::new(overlap_window), Stream::new(overlap_window)],
            prev: NIL,
            next: NIL,
        }
    }

    /// Out-of-order bytes held by both directions (with per-piece overhead).
    pub fn pending_mem(&self) -> u64 {
        self.streams[0].pending_mem() + self.streams[1].pending_mem()
    }
}

#[derive(Default)]
pub(super) struct Table {
    slots: Vec<Conn>,
    free: Vec<u32>,
    index: hashbrown::HashMap<FlowKey, u32, BuildU64Hasher>,
    /// Open connections, most recently active at `head`.
    head: u32,
    tail: u32,
    /// Closed connections by closing time: (slot, id), checked against the slot when popped.
    closed: VecDeque<(u32, u32)>,
}

impl Table {
    pub fn new() -> Table {
        Table { head: NIL, tail: NIL, ..Table::default() }
    }

    /// Connections remembered, open or closed.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    #[inline]
    pub fn find(&self, key: &FlowKey) -> Option<u32> {
        self.index.get(key).copied()
    }

    #[inline]
    pub fn conn(&mut self, slot: u32) -> &mut Conn {
        &mut self.slots[slot as usize]
    }

    pub fn get(&self, slot: u32) -> &Conn {
        &self.slots[slot as usize]
    }

    /// Adds an open connection (its key must not be in the table) as the most recently active.
    pub fn insert(&mut self, conn: Conn) -> u32 {
        let key = conn.key;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = conn;
                slot
            }
            None => {
                self.slots.push(conn);
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(key, slot);
        self.push_front(slot);
        slot
    }

    /// Marks activity on an open connection.
    #[inline]
    pub fn touch(&mut self, slot: u32, ts_ns: i64) {
        self.slots[slot as usize].last_ts = ts_ns;
        if self.head != slot {
            self.unlink(slot);
            self.push_front(slot);
        }
    }

    /// The open connection idle the longest.
    pub fn oldest_open(&self) -> Option<u32> {
        (self.tail != NIL).then_some(self.tail)
    }

    /// The connection closed the longest ago, dropping stale queue entries on the way.
    pub fn oldest_closed(&mut self) -> Option<u32> {
        while let Some(&(slot, id)) = self.closed.front() {
            let conn = &self.slots[slot as usize];
            if conn.state == State::Closed && conn.id == id {
                return Some(slot);
            }
            self.closed.pop_front();
        }
        None
    }

    /// Turns an open connection into a tombstone: off the recency list, memory freed, queued by `ts_ns`.
    pub fn mark_closed(&mut self, slot: u32, ts_ns: i64) {
        self.unlink(slot);
        let conn = &mut self.slots[slot as usize];
        conn.state = State::Closed;
        conn.last_ts = ts_ns;
        for stream in &mut conn.streams {
            stream.release();
        }
        self.closed.push_back((slot, conn.id));
        if self.closed.len() > 2 * self.index.len() + 16 {
            // Entries for slots since reused pile up when tombstones leave early (port reuse); drop them.
            let slots = &self.slots;
            self.closed.retain(|&(s, id)| slots[s as usize].state == State::Closed && slots[s as usize].id == id);
        }
    }

    /// Forgets a connection, open or closed.
    pub fn remove(&mut self, slot: u32) {
        let conn = &mut self.slots[slot as usize];
        let was_open = conn.state == State::Open;
        self.index.remove(&conn.key);
        conn.state = State::Free;
        for stream in &mut conn.streams {
            stream.release();
        }
        if was_open {
            self.unlink(slot);
        }
        self.free.push(slot);
    }

    /// Slots of open connections, in the order their ids were given.
    pub fn open_slots(&self) -> Vec<u32> {
        let mut slots: Vec<u32> =
            (0..self.slots.len() as u32).filter(|&s| self.slots[s as usize].state == State::Open).collect();
        slots.sort_by_key(|&s| self.slots[s as usize].id);
        slots
    }

    /// Open connections holding out-of-order bytes, largest first, as (bytes, slot).
    pub fn largest_holders(&self) -> Vec<(u64, u32)> {
        let mut holders: Vec<(u64, u32)> = (0..self.slots.len() as u32)
            .filter(|&s| self.slots[s as usize].state == State::Open)
            .map(|s| (self.slots[s as usize].pending_mem(), s))
            .filter(|&(mem, _)| mem > 0)
            .collect();
        holders.sort_unstable_by(|a, b| b.cmp(a));
        holders
    }

    fn unlink(&mut self, slot: u32) {
        let (prev, next) = {
            let c = &self.slots[slot as usize];
            (c.prev, c.next)
        };
        if prev == NIL {
            self.head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
    }

    fn push_front(&mut self, slot: u32) {
        let old_head = self.head;
        {
            let c = &mut self.slots[slot as usize];
            c.prev = NIL;
            c.next = old_head;
        }
        if old_head == NIL {
            self.tail = slot;
        } else {
            self.slots[old_head as usize].prev = slot;
        }
        self.head = slot;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_state_stays_small() {
        // What `Limits` documents per connection: the slot plus its table entry, rings aside.
        let per_conn = std::mem::size_of::<Conn>() + std::mem::size_of::<(FlowKey, u32)>();
        assert!(per_conn <= 400, "{per_conn} bytes");
    }
}
