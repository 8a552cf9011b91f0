//! Rows in send order: several pipelining connections whose replies arrive late, at random, must give the
//! same rows in the same order as when every reply is immediate; and a reply later than the window is
//! counted, not lost.

use std::net::SocketAddr;

use proptest::prelude::*;

use super::{CaptureParser, ParseConfig};
use crate::capture::synth::{self, PcapWriter, Segment};

const T0: i64 = 1_700_000_000_000_000_000;
const MS: i64 = 1_000_000;
const NO_REPLY: i64 = -1;

/// One command of a connection: when it is sent, whether its key exists, and how long its reply takes
/// (counted from the later of its sending and the previous reply: a connection answers in order;
/// `NO_REPLY`: none comes).
#[derive(Clone, Debug)]
struct Cmd {
    sent: i64,
    found: bool,
    delay: i64,
}

/// A capture of `conns` connections (opened in order, so conn ids are their indices) sending GETs.
fn capture(conns: &[Vec<Cmd>]) -> Vec<u8> {
    let server: SocketAddr = "10.0.0.2:6379".parse().unwrap();
    let mut packets: Vec<(i64, Vec<u8>)> = Vec::new();
    for (c, cmds) in conns.iter().enumerate() {
        let client: SocketAddr = format!("10.0.0.1:{}", 40000 + c).parse().unwrap();
        let seg = |s: Segment| synth::ethernet(&s.ip_packet(), &[]);
        packets.push((T0 - 2000 + 2 * c as i64, seg(Segment { flags: 0x02, ack: 0, ..Segment::new(client, server, 0, b"") })));
        packets.push((T0 - 1999 + 2 * c as i64, seg(Segment { flags: 0x12, ..Segment::new(server, client, 0, b"") })));
        let (mut c_seq, mut s_seq, mut last_reply) = (1u32, 1u32, i64::MIN);
        for (j, cmd) in cmds.iter().enumerate() {
            let key = format!("k{c}_{j}");
            let request = format!("*2\r\n$3\r\nGET\r\n${}\r\n{key}\r\n", key.len());
            let reply: &[u8] = if cmd.found { b"$3\r\nabc\r\n" } else { b"$-1\r\n" };
            packets.push((cmd.sent, seg(Segment::new(client, server, c_seq, request.as_bytes()))));
            c_seq += request.len() as u32;
            if cmd.delay == NO_REPLY {
                continue;
            }
            let replied = cmd.sent.max(last_reply) + cmd.delay;
            last_reply = replied;
            packets.push((replied, seg(Segment::new(server, client, s_seq, reply))));
            s_seq += reply.len() as u32;
        }
    }
    // Stable: a connection's packets of one time stay in the order they were made.
    packets.sort_by_key(|p| p.0);
    let mut w = PcapWriter::new(Vec::new(), 1, 65535, true, false).unwrap();
    for (ts, frame) in packets {
        w.packet(ts, &frame).unwrap();
    }
    w.into_inner()
}

/// A row as the tests compare it: (ts_ns, conn, key, found).
type Row = (i64, u32, Vec<u8>, i8);

/// Every row, in the order they come out, and the parser's counters.
fn parse(bytes: &[u8], min_rows: usize) -> (Vec<Row>, Vec<(&'static str, u64)>) {
    let mut p = CaptureParser::new(bytes, "order.pcap", &ParseConfig::default()).unwrap();
    let mut rows = Vec::new();
    while let Some(b) = p.next_batch(min_rows).unwrap() {
        for i in 0..b.len() {
            let key = b.key_data[b.key_offsets[i] as usize..b.key_offsets[i + 1] as usize].to_vec();
            rows.push((b.ts_ns[i], b.conn[i], key, b.found[i]));
        }
    }
    (rows, p.counters())
}

fn counter(counters: &[(&'static str, u64)], name: &str) -> u64 {
    counters.iter().find(|c| c.0 == name).map(|c| c.1).unwrap()
}

/// Connections with their commands' send times (distinct within a connection, increasing) from `gaps`.
fn with_delays(gaps: &[Vec<(u16, bool)>], delays: &[Vec<u16>]) -> Vec<Vec<Cmd>> {
    gaps.iter()
        .zip(delays)
        .map(|(cmds, ds)| {
            let mut t = T0;
            cmds.iter()
                .zip(ds.iter().chain(std::iter::repeat(&0)))
                .map(|(&(gap, found), &d)| {
                    t += 1 + i64::from(gap) * 1000;
                    Cmd { sent: t, found, delay: i64::from(d) * 1000 }
                })
                .collect()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn late_replies_change_neither_the_rows_nor_their_order(
        gaps in prop::collection::vec(prop::collection::vec((0u16..3000, any::<bool>()), 1..40), 1..5),
        delays in prop::collection::vec(prop::collection::vec(0u16..20000, 40), 5),
        min_rows in prop_oneof![Just(1usize), Just(7), Just(1 << 20)],
    ) {
        let immediate = capture(&with_delays(&gaps, &vec![Vec::new(); gaps.len()]));
        let late = capture(&with_delays(&gaps, &delays));
        let (expected, _) = parse(&immediate, 1 << 20);
        let (rows, counters) = parse(&late, min_rows);
        prop_assert_eq!(&rows, &expected);
        prop_assert!(rows.windows(2).all(|w| (w[0].0, w[0].1) <= (w[1].0, w[1].1)), "rows not in (ts_ns, conn) order");
        prop_assert_eq!(counter(&counters, "rows_out_of_order"), 0);
        prop_assert_eq!(rows.len(), gaps.iter().map(Vec::len).sum::<usize>());
    }
}

#[test]
fn a_reply_later_than_the_window_lets_later_rows_go_and_is_counted() {
    // Connection 0's one command is answered 6 s late; connection 1 sends a command every 100 ms meanwhile.
    let slow = vec![Cmd { sent: T0, found: true, delay: 6_000 * MS }];
    let busy: Vec<Cmd> = (1..80).map(|i| Cmd { sent: T0 + i * 100 * MS, found: false, delay: MS }).collect();
    let (rows, counters) = parse(&capture(&[slow, busy]), 1);
    assert_eq!(rows.len(), 80);
    // Rows of connection 1 older than 5 s behind the newest packet left before the slow reply came.
    let slow_at = rows.iter().position(|r| r.1 == 0).unwrap();
    assert!(slow_at > 0 && rows[..slow_at].iter().all(|r| r.1 == 1));
    assert_eq!(counter(&counters, "rows_out_of_order"), 1);
    // Within what the window allowed, the order holds: everything after the slow row is in order.
    assert!(rows[slow_at..].windows(2).all(|w| w[0].0 <= w[1].0));
}

#[test]
fn a_command_never_answered_comes_out_in_its_place_with_no_reply() {
    let silent = vec![Cmd { sent: T0, found: true, delay: NO_REPLY }];
    let busy: Vec<Cmd> = (1..5).map(|i| Cmd { sent: T0 + i * MS, found: true, delay: 10 }).collect();
    let (rows, counters) = parse(&capture(&[silent, busy]), 1);
    assert_eq!(rows.len(), 5);
    assert_eq!((rows[0].1, rows[0].3), (0, -1));
    assert!(rows[1..].iter().all(|r| r.1 == 1 && r.3 == 1));
    assert_eq!(counter(&counters, "rows_out_of_order"), 0);
}

/// `n` rows at times `t0, t0 + 1, ...` on connection 0, one-byte keys.
fn rows_from(t0: i64, n: usize) -> crate::parse::RowBatch {
    let mut b = crate::parse::RowBatch::empty();
    for i in 0..n {
        b.ts_ns.push(t0 + i as i64);
        b.conn.push(0);
        b.req.push(i as u64);
        b.batch.push(0);
        b.op.push(0);
        b.cmd.push(0);
        b.key_data.push(b'k');
        b.key_offsets.push(b.key_data.len() as i64);
        b.field_offsets.push(0);
        b.field_valid.push(false);
        b.value_size.push(-1);
        b.found.push(-1);
        b.latency_ns.push(-1);
        b.error.push(-1);
    }
    b
}

#[test]
fn rows_held_past_the_memory_bound_go_oldest_first_and_a_later_older_row_is_counted() {
    use super::order::{Reorder, MAX_ROWS};
    let mut order = Reorder::default();
    // A command sent at T0 still waits: nothing after it may go, until too many rows are held.
    let held = rows_from(T0 + 10, MAX_ROWS - 1);
    let held = order.release(held, Some(T0), T0 + MS, false);
    assert_eq!((order.out.len(), held.len()), (0, MAX_ROWS - 1));
    let mut held = held;
    held.append_range(&rows_from(T0 + 10 + MAX_ROWS as i64, 1), 0..1);
    assert!(order.due(&held, usize::MAX));
    let held = order.release(held, Some(T0), T0 + MS, false);
    assert!(held.len() <= MAX_ROWS / 2 && !order.out.is_empty());
    assert!(order.out.ts_ns.windows(2).all(|w| w[0] <= w[1]) && held.ts_ns[0] > *order.out.ts_ns.last().unwrap());
    assert_eq!(order.out_of_order, 0);
    // The waiting command's row comes at last: older than rows already out.
    let mut held = held;
    held.append_range(&rows_from(T0, 1), 0..1);
    order.release(held, None, T0 + MS, false);
    assert_eq!(order.out_of_order, 1);
}

/// A held row as the release test compares it: (ts, conn, req, key).
type HeldRow = (i64, u32, u64, Vec<u8>);

/// The rows `release` lets go and keeps, in order: what sorting every row by its key, stably, gives (the
/// release before it sorted commands instead of rows).
fn released_by_row(held: &crate::parse::RowBatch, limit: i64) -> (Vec<HeldRow>, Vec<HeldRow>) {
    let mut order: Vec<usize> = (0..held.len()).collect();
    order.sort_by_key(|&i| (held.ts_ns[i], held.conn[i], held.req[i]));
    let (gone, kept): (Vec<usize>, Vec<usize>) = order.into_iter().partition(|&i| held.ts_ns[i] < limit);
    (gone.into_iter().map(|i| held_row(held, i)).collect(), kept.into_iter().map(|i| held_row(held, i)).collect())
}

fn held_row(b: &crate::parse::RowBatch, i: usize) -> HeldRow {
    (b.ts_ns[i], b.conn[i], b.req[i], b.key_data[b.key_offsets[i] as usize..b.key_offsets[i + 1] as usize].to_vec())
}

fn rows_of(b: &crate::parse::RowBatch) -> Vec<HeldRow> {
    (0..b.len()).map(|i| held_row(b, i)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Commands of 1-4 rows each (a key per row), on three connections, at times that often tie, made in any
    /// order; one command now and then made in two parts with another between them.
    #[test]
    fn release_sorts_commands_as_sorting_their_rows_would(
        commands in prop::collection::vec((0i64..6, 0u32..3, 0u64..4, 1usize..5, any::<bool>()), 0..60),
        limit in 0i64..8,
    ) {
        let mut held = crate::parse::RowBatch::empty();
        let mut split = Vec::new();
        for (n, &(ts, conn, req, len, in_two)) in commands.iter().enumerate() {
            for r in 0..len {
                let mut row = rows_from(T0 + ts, 1);
                row.conn[0] = conn;
                row.req[0] = req;
                row.key_data = format!("{n}.{r}").into_bytes();
                row.key_offsets = vec![0, row.key_data.len() as i64];
                if in_two && r == len - 1 && len > 1 {
                    split.push(row); // made later, after the next command's rows
                } else {
                    held.append_range(&row, 0..1);
                }
            }
            if n % 2 == 1 {
                for row in split.drain(..) {
                    held.append_range(&row, 0..1);
                }
            }
        }
        for row in split.drain(..) {
            held.append_range(&row, 0..1);
        }
        let (gone, kept) = released_by_row(&held, T0 + limit);
        let mut order = super::order::Reorder::default();
        let rest = order.release(held, Some(T0 + limit), T0, false);
        prop_assert_eq!(rows_of(&order.out), gone);
        prop_assert_eq!(rows_of(&rest), kept);
        prop_assert_eq!(order.out_of_order, 0);
    }
}

/// One connection pipelining batches: each command in a segment of its own, then each reply in one of its
/// own; `lost` names the (client side?, command index) whose segment the capture missed.
fn pipelined(batches: &[Vec<(Vec<u8>, Vec<u8>)>], lost: &[(bool, usize)]) -> Vec<u8> {
    let server: SocketAddr = "10.0.0.2:6379".parse().unwrap();
    let client: SocketAddr = "10.0.0.1:40000".parse().unwrap();
    let seg = |s: Segment| synth::ethernet(&s.ip_packet(), &[]);
    let mut w = PcapWriter::new(Vec::new(), 1, 65535, true, false).unwrap();
    w.packet(T0 - 2, &seg(Segment { flags: 0x02, ack: 0, ..Segment::new(client, server, 0, b"") })).unwrap();
    w.packet(T0 - 1, &seg(Segment { flags: 0x12, ..Segment::new(server, client, 0, b"") })).unwrap();
    let (mut c_seq, mut s_seq, mut n, mut t) = (1u32, 1u32, 0usize, T0);
    for batch in batches {
        for (side, from_client) in [(0, true), (1, false)] {
            for (k, pair) in batch.iter().enumerate() {
                let bytes = if side == 0 { &pair.0 } else { &pair.1 };
                let (src, dst) = if from_client { (client, server) } else { (server, client) };
                // Each side acknowledges all the other sent: a hole the receiver got past is given up.
                let (seq, ack) = if from_client { (c_seq, s_seq) } else { (s_seq, c_seq) };
                t += 1000;
                if !lost.contains(&(from_client, n + k)) {
                    w.packet(t, &seg(Segment { ack, ..Segment::new(src, dst, seq, bytes) })).unwrap();
                }
                *(if from_client { &mut c_seq } else { &mut s_seq }) += bytes.len() as u32;
            }
        }
        n += batch.len();
        t += MS;
    }
    w.into_inner()
}

fn resp(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    out
}

fn kind(i: usize) -> usize {
    (i * i * 31 + i * 7 + (i >> 3)) % 5
}

/// A mix of GET, MGET, SET and DEL with their replies; the value sizes say which command a reply was for.
fn mixed_batches(batches: usize, per_batch: usize) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    (0..batches)
        .map(|b| {
            (0..per_batch)
                .map(|k| {
                    let i = b * per_batch + k;
                    let key = format!("k{i}");
                    let bulk = |n: usize| format!("${n}\r\n{}\r\n", "v".repeat(n)).into_bytes();
                    // Not periodic: a shift by a period would fit as well as the true offset.
                    match kind(i) {
                        0 | 3 => (resp(&["GET", &key]), bulk(i % 97 + 1)),
                        1 => {
                            let keys: Vec<String> = (0..(i * i) % 7 % 4 + 1).map(|j| format!("{key}_{j}")).collect();
                            let mut args = vec!["MGET"];
                            args.extend(keys.iter().map(String::as_str));
                            let mut reply = format!("*{}\r\n", keys.len()).into_bytes();
                            keys.iter().for_each(|_| reply.extend(bulk(i % 89 + 1)));
                            (resp(&args), reply)
                        }
                        2 => (resp(&["SET", &key, "x"]), b"+OK\r\n".to_vec()),
                        _ => (resp(&["DEL", &key]), b":1\r\n".to_vec()),
                    }
                })
                .collect()
        })
        .collect()
}

/// (key, value_size) of every row whose command was paired; and the counters.
fn paired_rows(bytes: &[u8]) -> (Vec<(String, i32)>, usize, Vec<(&'static str, u64)>) {
    let mut p = CaptureParser::new(bytes, "realign.pcap", &ParseConfig::default()).unwrap();
    let (mut paired, mut commands) = (Vec::new(), 0);
    while let Some(b) = p.next_batch(1 << 20).unwrap() {
        for i in 0..b.len() {
            commands += 1;
            let key = String::from_utf8_lossy(&b.key_data[b.key_offsets[i] as usize..b.key_offsets[i + 1] as usize]).into_owned();
            if b.latency_ns[i] >= 0 {
                paired.push((key, b.value_size[i]));
            }
        }
    }
    (paired, commands, p.counters())
}

/// The value size the reply to the read of `key` carries in `mixed_batches`.
fn true_size(key: &str) -> Option<i32> {
    let digits: String = key[1..].chars().take_while(|c| c.is_ascii_digit()).collect();
    let i: usize = digits.parse().unwrap();
    match kind(i) {
        0 | 3 => Some((i % 97 + 1) as i32),
        1 => Some((i % 89 + 1) as i32),
        _ => None,
    }
}

#[test]
fn pairing_resumes_after_a_lost_reply_segment_and_a_lost_request_segment_pairs_nothing_wrongly() {
    let batches = mixed_batches(6, 40);
    // A reply of the fourth batch, or a command of the second, never reaches the capture.
    for lost in [[(false, 130)], [(true, 55)]] {
        let (paired, rows, counters) = paired_rows(&pipelined(&batches, &lost));
        for (key, size) in &paired {
            if let Some(want) = true_size(key) {
                assert_eq!(*size, want, "{key} paired with another command's reply");
            }
        }
        if !lost[0].0 {
            // The replies after the loss are realigned within its batch (their frames found again at the next
            // quiet moment): only the commands whose reply was lost or cut, and those whose replies' leading
            // frames could be the cut reply's, stay unpaired.
            assert!(counter(&counters, "realigned_replies") > 0);
            assert!(paired.len() * 10 >= rows * 8, "{} of {rows} rows paired", paired.len());
        }
    }
}

#[test]
fn replies_whose_shapes_fit_at_two_offsets_are_not_paired() {
    // GET and SET in turn: after two lost replies, shifting the replies by two fits as well as the true offset
    // does, whatever the run: nothing tells them apart, so nothing after the loss is paired. (With one lost,
    // the frames found again up to the next batch leave no room for the shift: the replies before a command
    // was sent cannot answer it, and with none lost before them the shift back is not possible either.)
    let batches: Vec<Vec<(Vec<u8>, Vec<u8>)>> = (0..3)
        .map(|b| {
            (0..40)
                .map(|k| {
                    let key = format!("k{}", b * 40 + k);
                    if k % 2 == 0 {
                        (resp(&["GET", &key]), format!("$3\r\nabc\r\n").into_bytes())
                    } else {
                        (resp(&["SET", &key, "x"]), b"+OK\r\n".to_vec())
                    }
                })
                .collect()
        })
        .collect();
    let (paired, _, counters) = paired_rows(&pipelined(&batches, &[(false, 45), (false, 46)]));
    assert_eq!(counter(&counters, "realigned_replies"), 0);
    // Paired: the first batch, and the replies before the loss in the second.
    assert_eq!(paired.len(), 40 + 5);
    assert!(paired.iter().all(|(key, _)| key[1..].parse::<usize>().unwrap() < 45));
}
