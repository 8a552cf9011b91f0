//! Rows in send order. A command's rows are made when its reply completes, but their `ts_ns` is when the
//! command was sent; across connections the two orders differ (a slow reply on one connection, quick ones on
//! another). A cache is consulted when a request is sent, and a time series is expected sorted by its time,
//! so rows wait here until no command still pending anywhere can be older, then leave sorted by
//! (ts_ns, conn, req), the rows of one command in their own order.
//!
//! The wait is bounded: by capture time (`WINDOW_NS` behind the newest packet) and by memory (`MAX_ROWS`
//! rows or `MAX_STRING_BYTES` of keys and fields held). A bound that is hit releases rows early; a row that
//! then comes out older than one already released is counted (`rows_out_of_order`), never dropped.

use super::rows::RowBatch;

/// Capture time a row may wait for the commands pending before it.
pub const WINDOW_NS: i64 = 5_000_000_000;
/// Rows, and bytes of their keys and fields, held at most before the oldest are released regardless.
pub const MAX_ROWS: usize = 1 << 20;
pub const MAX_STRING_BYTES: usize = 64 << 20;
/// Rows held before the first sort; later the threshold doubles with what stays held, so that the sorting
/// costs O(log n) per row however long rows must wait.
const FIRST_CHECK: usize = 4096;

pub struct Reorder {
    /// Rows released, in order: the batch being built for the caller.
    pub out: RowBatch,
    /// Largest `ts_ns` released so far.
    last_ts: i64,
    pub out_of_order: u64,
    /// Held rows at which to look again.
    next_check: usize,
    /// Rows still held after the last release.
    kept: usize,
}

impl Default for Reorder {
    fn default() -> Reorder {
        Reorder { out: RowBatch::empty(), last_ts: i64::MIN, out_of_order: 0, next_check: FIRST_CHECK, kept: 0 }
    }
}

impl Reorder {
    /// Whether `held` rows are enough to be worth sorting now, the caller wanting `want` more rows out.
    pub fn due(&self, held: &RowBatch, want: usize) -> bool {
        held.len() >= self.next_check.min(want.max(self.kept + 1)) || held.len() >= MAX_ROWS || string_bytes(held) >= MAX_STRING_BYTES
    }

    /// Moves the rows of `held` older than `pending` (the send time of the oldest command still pending
    /// anywhere; None: none is) or than the window behind `now` into `out`, in order; returns the rest,
    /// sorted. With `all`, everything goes (the capture ended).
    pub fn release(&mut self, held: RowBatch, pending: Option<i64>, now: i64, all: bool) -> RowBatch {
        let mut order: Vec<usize> = (0..held.len()).collect();
        // Stable: equal keys (the rows of one command) keep the order they were made in.
        order.sort_by_key(|&i| (held.ts_ns[i], held.conn[i], held.req[i]));
        let limit = if all { i64::MAX } else { pending.unwrap_or(i64::MAX).max(now.saturating_sub(WINDOW_NS)) };
        let mut cut = order.partition_point(|&i| held.ts_ns[i] < limit);
        // Over the memory bound: the oldest go until half the bound is left.
        if order.len() - cut >= MAX_ROWS || bytes_from(&held, &order[cut..]) >= MAX_STRING_BYTES {
            while cut < order.len()
                && (order.len() - cut > MAX_ROWS / 2 || bytes_from(&held, &order[cut..]) > MAX_STRING_BYTES / 2)
            {
                cut += (order.len() - cut).div_ceil(4);
            }
        }
        for &i in &order[..cut] {
            if held.ts_ns[i] < self.last_ts {
                self.out_of_order += 1;
            }
            self.last_ts = self.last_ts.max(held.ts_ns[i]);
        }
        self.kept = order.len() - cut;
        self.next_check = FIRST_CHECK.max(2 * self.kept);
        // Room for what stays and what comes before the next look (the caller adds those rows to it): grown by
        // doubling from empty, its columns were copied again and again, into fresh pages.
        let mut rest = held.with_room_for(self.next_check);
        if order.iter().enumerate().all(|(k, &i)| k == i) {
            // Already in order (one connection, or replies in send order): whole columns are moved or copied.
            if cut == order.len() && self.out.is_empty() {
                self.out = held;
            } else {
                self.out.append_range(&held, 0..cut);
                rest.append_range(&held, cut..order.len());
            }
            return rest;
        }
        self.out.append_rows(&held, &order[..cut]);
        rest.append_rows(&held, &order[cut..]);
        rest
    }
}

fn string_bytes(b: &RowBatch) -> usize {
    b.key_data.len() + b.field_data.len()
}

fn bytes_from(b: &RowBatch, rows: &[usize]) -> usize {
    rows.iter().map(|&i| (b.key_offsets[i + 1] - b.key_offsets[i] + b.field_offsets[i + 1] - b.field_offsets[i]) as usize).sum()
}

impl RowBatch {
    /// Appends the rows `rows` of `src`, a column slice at a time.
    pub(super) fn append_range(&mut self, src: &RowBatch, rows: std::ops::Range<usize>) {
        let (a, b) = (rows.start, rows.end);
        self.ts_ns.extend_from_slice(&src.ts_ns[a..b]);
        self.conn.extend_from_slice(&src.conn[a..b]);
        self.req.extend_from_slice(&src.req[a..b]);
        self.batch.extend_from_slice(&src.batch[a..b]);
        self.op.extend_from_slice(&src.op[a..b]);
        self.cmd.extend_from_slice(&src.cmd[a..b]);
        let key_base = self.key_data.len() as i64 - src.key_offsets[a];
        self.key_data.extend_from_slice(&src.key_data[src.key_offsets[a] as usize..src.key_offsets[b] as usize]);
        self.key_offsets.extend(src.key_offsets[a + 1..=b].iter().map(|o| o + key_base));
        let field_base = self.field_data.len() as i64 - src.field_offsets[a];
        self.field_data.extend_from_slice(&src.field_data[src.field_offsets[a] as usize..src.field_offsets[b] as usize]);
        self.field_offsets.extend(src.field_offsets[a + 1..=b].iter().map(|o| o + field_base));
        self.field_valid.extend_from_slice(&src.field_valid[a..b]);
        self.value_size.extend_from_slice(&src.value_size[a..b]);
        self.found.extend_from_slice(&src.found[a..b]);
        self.latency_ns.extend_from_slice(&src.latency_ns[a..b]);
        self.error.extend_from_slice(&src.error[a..b]);
    }

    /// Appends the rows `rows` of `src`, in that order. Consecutive rows (a command's, mostly: they are made
    /// together and sort together) go a column slice at a time: copying each row's key and field alone cost a
    /// call of `memcpy` each, a fifth of the parser's time.
    pub fn append_rows(&mut self, src: &RowBatch, rows: &[usize]) {
        let mut k = 0;
        while k < rows.len() {
            let (start, mut end) = (rows[k], rows[k] + 1);
            k += 1;
            while k < rows.len() && rows[k] == end {
                end += 1;
                k += 1;
            }
            self.append_range(src, start..end);
        }
    }
}
