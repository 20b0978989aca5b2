//! Per-message records and their CSV form.
//!
//! Columns follow the original perfbench's per-message output: xid, request
//! type, timestamp and size, response type, timestamp and size, latency and
//! connection id. Timestamps are CLOCK_MONOTONIC nanoseconds; latency is in
//! microseconds with nanosecond digits. A lost message has empty response
//! fields and an empty latency.

use crate::codec;
use anyhow::Context;
use std::io::Write;
use std::path::Path;

/// Request type code for a data-plane packet (injected by perfbench or carried
/// in a PACKET_OUT), which is not an OpenFlow message type.
pub const DATA_PACKET: u8 = 0xff;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    pub req_ns: u64,
    /// 0 while no response has arrived.
    pub resp_ns: u64,
    pub xid: u32,
    pub conn: u16,
    pub req_type: u8,
    pub resp_type: u8,
    pub req_size: u16,
    pub resp_size: u16,
}

impl Record {
    #[inline]
    pub fn answered(&self) -> bool {
        self.resp_ns != 0
    }

    #[inline]
    pub fn latency_ns(&self) -> Option<u64> {
        self.answered()
            .then(|| self.resp_ns.saturating_sub(self.req_ns))
    }
}

/// A receiver-side observation of a probe (PACKET_IN at a controller, a
/// PACKET_OUT'd frame at a switch), matched to the sender's record by `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub seq: u64,
    pub tx_ns: u64,
    pub rx_ns: u64,
    pub size: u16,
    pub msg_type: u8,
}

/// Fills the sender's records (indexed by sequence number) with arrivals.
/// Returns (matched, duplicates, unknown sequence numbers).
pub fn merge_arrivals(records: &mut [Record], arrivals: &[Arrival]) -> (u64, u64, u64) {
    let (mut matched, mut dup, mut unknown) = (0, 0, 0);
    for a in arrivals {
        match records.get_mut(a.seq as usize) {
            Some(r) if r.req_ns == a.tx_ns => {
                if r.answered() {
                    dup += 1;
                } else {
                    r.resp_ns = a.rx_ns;
                    r.resp_size = a.size;
                    r.resp_type = a.msg_type;
                    matched += 1;
                }
            }
            _ => unknown += 1,
        }
    }
    (matched, dup, unknown)
}

/// Records from the arrivals of one sender's probes when the sender ran in
/// another process: sorted by sequence number, duplicates dropped, and every
/// missing sequence number (from 0 up to the highest seen) recorded as lost,
/// with the send time of the next probe that did arrive (an upper bound).
/// Losses after the last arrival cannot be seen this way.
pub fn records_with_gaps(
    arrivals: &[Arrival],
    conn: u16,
    req_type: u8,
    req_size: u16,
) -> Vec<Record> {
    let mut a: Vec<&Arrival> = arrivals.iter().collect();
    a.sort_by_key(|x| x.seq);
    a.dedup_by_key(|x| x.seq);
    let mut out = Vec::with_capacity(a.last().map_or(0, |x| x.seq as usize + 1));
    let mut next = 0u64;
    for x in a {
        while next < x.seq {
            out.push(Record {
                req_ns: x.tx_ns,
                resp_ns: 0,
                xid: next as u32,
                conn,
                req_type,
                resp_type: 0,
                req_size,
                resp_size: 0,
            });
            next += 1;
        }
        out.push(Record {
            req_ns: x.tx_ns,
            resp_ns: x.rx_ns,
            xid: x.seq as u32,
            conn,
            req_type,
            resp_type: x.msg_type,
            req_size,
            resp_size: x.size,
        });
        next = x.seq + 1;
    }
    out
}

pub const CSV_HEADER: &str = "xid,request_type,request_ts_ns,request_size,response_type,response_ts_ns,response_size,latency_us,connection_id\n";

fn type_label(version: u8, t: u8) -> &'static str {
    if t == DATA_PACKET {
        "DATA_PACKET"
    } else {
        codec::type_name(version, t)
    }
}

/// Writes records of several connections to one CSV file.
pub fn write_csv(path: &Path, sets: &[(u8, &[Record])]) -> anyhow::Result<u64> {
    let f =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    w.write_all(CSV_HEADER.as_bytes())?;
    let mut n = 0;
    let mut b = itoa::Buffer::new();
    for (version, recs) in sets {
        for r in recs.iter() {
            w.write_all(b.format(r.xid).as_bytes())?;
            w.write_all(b",")?;
            w.write_all(type_label(*version, r.req_type).as_bytes())?;
            w.write_all(b",")?;
            w.write_all(b.format(r.req_ns).as_bytes())?;
            w.write_all(b",")?;
            w.write_all(b.format(r.req_size).as_bytes())?;
            w.write_all(b",")?;
            if let Some(lat) = r.latency_ns() {
                w.write_all(type_label(*version, r.resp_type).as_bytes())?;
                w.write_all(b",")?;
                w.write_all(b.format(r.resp_ns).as_bytes())?;
                w.write_all(b",")?;
                w.write_all(b.format(r.resp_size).as_bytes())?;
                w.write_all(b",")?;
                w.write_all(b.format(lat / 1000).as_bytes())?;
                write!(w, ".{:03}", lat % 1000)?;
            } else {
                w.write_all(b",,,")?;
            }
            w.write_all(b",")?;
            w.write_all(b.format(r.conn).as_bytes())?;
            w.write_all(b"\n")?;
            n += 1;
        }
    }
    w.flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows() {
        let recs = [
            Record {
                req_ns: 1_000,
                resp_ns: 13_345,
                xid: 1,
                conn: 2,
                req_type: 2,
                resp_type: 3,
                req_size: 8,
                resp_size: 8,
            },
            Record {
                req_ns: 2_000,
                resp_ns: 0,
                xid: 2,
                conn: 2,
                req_type: 2,
                resp_type: 0,
                req_size: 8,
                resp_size: 0,
            },
        ];
        let dir = std::env::temp_dir().join(format!("pb-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.csv");
        assert_eq!(write_csv(&p, &[(4, &recs)]).unwrap(), 2);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER.trim_end());
        assert_eq!(
            lines[1],
            "1,OFPT_ECHO_REQUEST,1000,8,OFPT_ECHO_REPLY,13345,8,12.345,2"
        );
        assert_eq!(lines[2], "2,OFPT_ECHO_REQUEST,2000,8,,,,,2");
    }

    #[test]
    fn gaps_become_losses() {
        let arr = |seq, tx| Arrival {
            seq,
            tx_ns: tx,
            rx_ns: tx + 10,
            size: 60,
            msg_type: 10,
        };
        let r = records_with_gaps(
            &[arr(3, 300), arr(1, 100), arr(1, 100), arr(4, 400)],
            0,
            DATA_PACKET,
            64,
        );
        let got: Vec<(u32, u64, bool)> =
            r.iter().map(|x| (x.xid, x.req_ns, x.answered())).collect();
        assert_eq!(
            got,
            vec![
                (0, 100, false),
                (1, 100, true),
                (2, 300, false),
                (3, 300, true),
                (4, 400, true)
            ]
        );
    }

    #[test]
    fn merge_matches_by_seq_and_timestamp() {
        let mut recs: Vec<Record> = (0..3)
            .map(|i| Record {
                req_ns: 100 + i,
                xid: i as u32,
                req_type: DATA_PACKET,
                ..Record::default()
            })
            .collect();
        let arr = |seq, tx| Arrival {
            seq,
            tx_ns: tx,
            rx_ns: 500,
            size: 60,
            msg_type: 10,
        };
        let got = merge_arrivals(
            &mut recs,
            &[arr(0, 100), arr(0, 100), arr(2, 999), arr(7, 1)],
        );
        assert_eq!(got, (1, 1, 2));
        assert_eq!(recs[0].latency_ns(), Some(400));
        assert!(!recs[2].answered());
    }
}
