//! Rows in send order. A command's rows are made when its reply completes, but their `ts_ns` is when the
//! command was sent; across connections the two orders differ (a slow reply on one connection, quick ones on
//! another). A cache is consulted when a request is sent, and a time series is expected sorted by its time,
//! so rows wait here until no command still pending anywhere can be older, then leave sorted by
//! (ts_ns, conn, req), the rows of one command in their own order.
//!
//! The wait is bounded: by capture time (`WINDOW_NS` behind the newest packet) and by memory (`MAX_ROWS`
//! rows or `MAX_STRING_BYTES` of keys and fields held). A bound that is hit releases rows early; a row that
//! then comes out older than one already released is counted (`rows_out_of_order`), never dropped.

use std::ops::Range;

use super::rows::RowBatch;

/// Capture time a row may wait for the commands pending before it.
pub const WINDOW_NS: i64 = 5_000_000_000;
/// Rows, and bytes of their keys and fields, held at most before the oldest are released regardless.
/// (A quarter of what it was: held rows cost about 80 bytes each, twice while they are sorted, and a capture
/// whose replies are missing holds this many at all times; 1 Mi rows took parse.py past 500 MiB.)
pub const MAX_ROWS: usize = 1 << 18;
pub const MAX_STRING_BYTES: usize = 16 << 20;
/// New rows held before a look at most (fewer when the caller wants fewer); later a quarter of those kept
/// at the last look, so that sorting costs O(log n) per row however long rows must wait.
const FIRST_CHECK: usize = 4096;

pub struct Reorder {
    /// Rows released, in order: the batch being built for the caller.
    pub out: RowBatch,
    /// Largest `ts_ns` released so far.
    last_ts: i64,
    pub out_of_order: u64,
    /// Rows still held after the last release.
    kept: usize,
}

impl Default for Reorder {
    fn default() -> Reorder {
        Reorder { out: RowBatch::empty(), last_ts: i64::MIN, out_of_order: 0, kept: 0 }
    }
}

impl Reorder {
    /// Whether `held` rows are worth sorting now, the caller wanting `want` more rows out: a look sorts and
    /// copies every row held, so it waits for new rows a quarter as many as those kept at the last look, and
    /// for as many as the caller wants, up to `FIRST_CHECK`. (It looked again at every packet once more rows
    /// were kept than the caller wanted: on a capture of one direction, whose rows wait behind commands never
    /// answered, that was up to 2^18 rows sorted per packet, 35 s instead of 3 s.)
    pub fn due(&self, held: &RowBatch, want: usize) -> bool {
        let fresh = held.len().saturating_sub(self.kept);
        fresh >= (self.kept / 4).max(want.min(FIRST_CHECK)).max(1) || held.len() >= MAX_ROWS || string_bytes(held) >= MAX_STRING_BYTES
    }

    /// Moves the rows of `held` older than `pending` (the send time of the oldest command still pending
    /// anywhere; None: none is) or than the window behind `now` into `out`, in order; returns the rest,
    /// sorted. With `all`, everything goes (the capture ended).
    pub fn release(&mut self, held: RowBatch, pending: Option<i64>, now: i64, all: bool) -> RowBatch {
        // A command's rows are made together and share their key: its commands are sorted, not its rows (a
        // feature store's HMGET is dozens of rows; sorting them one by one was 5-6% of the parser's time).
        let mut runs = runs_of(&held);
        // Stable: equal keys (two runs of one command) keep the order they were made in.
        runs.sort_by_key(|r| (r.ts, r.conn, r.req));
        let limit = if all { i64::MAX } else { pending.unwrap_or(i64::MAX).max(now.saturating_sub(WINDOW_NS)) };
        let rows = held.len();
        let mut cut = runs[..runs.partition_point(|r| r.ts < limit)].iter().map(|r| r.rows.len()).sum::<usize>();
        // Over the memory bound: the oldest go until half the bound is left.
        if rows - cut >= MAX_ROWS || bytes_after(&held, &runs, cut) >= MAX_STRING_BYTES {
            while cut < rows && (rows - cut > MAX_ROWS / 2 || bytes_after(&held, &runs, cut) > MAX_STRING_BYTES / 2) {
                cut += (rows - cut).div_ceil(4);
            }
        }
        let (gone, kept) = split_at_row(&runs, cut);
        for r in &gone {
            if r.ts < self.last_ts {
                self.out_of_order += r.rows.len() as u64;
            }
            self.last_ts = self.last_ts.max(r.ts);
        }
        self.kept = rows - cut;
        // Room for what stays and what comes before the next look (the caller adds those rows to it): grown by
        // doubling from empty, its columns were copied again and again, into fresh pages.
        let mut rest = held.with_room_for(self.kept + (self.kept / 4).max(FIRST_CHECK));
        if cut == rows && self.out.is_empty() && runs.windows(2).all(|w| w[0].rows.end == w[1].rows.start) {
            // Already in order (one connection, or replies in send order), and all of it goes: moved whole.
            self.out = held;
            return rest;
        }
        // Runs that follow each other in `held` go a column slice at a time: copying each row's key and field
        // alone cost a call of `memcpy` each, a fifth of the parser's time.
        for (into, from) in [(&mut self.out, gone), (&mut rest, kept)] {
            let mut k = 0;
            while k < from.len() {
                let (start, mut end) = (from[k].rows.start, from[k].rows.end);
                k += 1;
                while k < from.len() && from[k].rows.start == end {
                    end = from[k].rows.end;
                    k += 1;
                }
                into.append_range(&held, start..end);
            }
        }
        rest
    }
}

/// Rows `rows` of a held batch, consecutive and of one key (`ts`, `conn`, `req`): a command's rows.
#[derive(Clone)]
struct Run {
    ts: i64,
    conn: u32,
    req: u64,
    rows: Range<usize>,
}

/// `held` as maximal runs of consecutive rows with the same key, in row order.
fn runs_of(held: &RowBatch) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for i in 0..held.len() {
        let (ts, conn, req) = (held.ts_ns[i], held.conn[i], held.req[i]);
        match runs.last_mut() {
            Some(r) if (r.ts, r.conn, r.req) == (ts, conn, req) => r.rows.end = i + 1,
            _ => runs.push(Run { ts, conn, req, rows: i..i + 1 }),
        }
    }
    runs
}

/// The runs holding the first `cut` rows of `runs` and those holding the rest; a run astride the cut is split.
fn split_at_row(runs: &[Run], cut: usize) -> (Vec<Run>, Vec<Run>) {
    let (mut gone, mut kept, mut seen) = (Vec::new(), Vec::new(), 0);
    for r in runs {
        let take = (cut - seen.min(cut)).min(r.rows.len());
        if take > 0 {
            gone.push(Run { rows: r.rows.start..r.rows.start + take, ..r.clone() });
        }
        if take < r.rows.len() {
            kept.push(Run { rows: r.rows.start + take..r.rows.end, ..r.clone() });
        }
        seen += r.rows.len();
    }
    (gone, kept)
}

/// Bytes of keys and fields in the rows of `runs` past the first `cut`.
fn bytes_after(b: &RowBatch, runs: &[Run], cut: usize) -> usize {
    let (_, kept) = split_at_row(runs, cut);
    kept.iter()
        .map(|r| {
            let (s, e) = (r.rows.start, r.rows.end);
            (b.key_offsets[e] - b.key_offsets[s] + b.field_offsets[e] - b.field_offsets[s]) as usize
        })
        .sum()
}

fn string_bytes(b: &RowBatch) -> usize {
    b.key_data.len() + b.field_data.len()
}

impl RowBatch {
    /// Appends the rows `rows` of `src`, a column slice at a time.
    pub(super) fn append_range(&mut self, src: &RowBatch, rows: Range<usize>) {
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
}
