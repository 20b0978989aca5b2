//! `perfbench switch` and `perfbench dp`: the switch side, emulated or at a real switch's port.

use super::args::*;
use super::parse::*;
use anyhow::bail;
use perfbench::clock::now_ns;
use perfbench::conn::parse_addr;
use perfbench::record;
use perfbench::schedule::Schedule;
use perfbench::summary::{self, Window};
use perfbench::{dp, switch};

pub fn cmd_switch(a: SwitchArgs) -> anyhow::Result<()> {
    check_timing(&a.timing)?;
    let versions = parse_versions(&a.versions)?;
    let base = parse_addr(&a.connect)?;
    let nodelay = parse_bool(&a.nodelay)?;
    if a.switches == 0 || a.switches > 1000 {
        bail!("--switches must be within 1..=1000");
    }
    let sched = match (&a.schedule, a.packet_in_rate) {
        (Some(p), _) => Some(Schedule::from_file(p)?),
        (None, r) if r > 0.0 => Some(Schedule::constant(r)?),
        _ => None,
    };
    let deadline = now_ns() + (a.setup_timeout * 1e9) as u64;
    let st = switch::SwitchTiming {
        setup_deadline_ns: deadline,
        duration_ns: (a.timing.duration * 1e9) as u64,
        drain_ns: (a.timing.drain * 1e9) as u64,
    };
    let results: Vec<anyhow::Result<switch::SwitchResult>> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..a.switches)
            .map(|i| {
                let addr = if a.same_port {
                    Ok(base)
                } else {
                    nth_addr(base, i, "--connect")
                };
                let spec = switch::SwitchSpec {
                    tenant: i as u32,
                    dpid: i as u64 + 1,
                    versions: versions.clone(),
                    nports: 2,
                    packet_in: sched.clone(),
                    in_port: 1,
                    frame_len: a.frame_size,
                    nodelay,
                };
                sc.spawn(move || {
                    let s = perfbench::conn::connect_until(addr?, deadline)?;
                    switch::run(spec, s, switch::StartAt::Handshake, st)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("switch thread panicked")))
            })
            .collect()
    });
    let mut out = Vec::new();
    let mut csv = Vec::new();
    for r in results {
        let r = r?;
        // Each switch starts on its own; its window starts at its first PACKET_IN or PACKET_OUT.
        let first = r
            .records
            .first()
            .map(|x| x.req_ns)
            .into_iter()
            .chain(r.arrivals.first().map(|x| x.tx_ns))
            .min()
            .unwrap_or(0);
        let w = Window::trimmed(first, a.timing.duration, a.timing.warmup, a.timing.cooldown);
        let recs = record::records_with_gaps(
            &r.arrivals,
            r.tenant as u16,
            perfbench::codec::types::PACKET_OUT,
            0,
        );
        let s = summary::summarize(r.tenant, "packet-out-received", 0.0, &recs, &w);
        out.push(serde_json::json!({
            "switch": r.tenant,
            "version": r.version,
            "packet_ins_sent": r.records.len(),
            "packet_in_sent_in_window": r.records.iter().filter(|x| w.contains(x.req_ns)).count(),
            "packet_in_send_lateness_p99_us": r.lateness_p99_us,
            "requests_answered": r.answered,
            "flow_mods": r.flow_mods,
            "unmatched": r.unmatched,
            "packet_out_arrivals": s,
            "aborted": r.aborted,
            "window": w,
        }));
        csv.push((r.version.map(|v| v.wire()).unwrap_or(4), recs));
    }
    let doc = serde_json::json!({"switches": out});
    if let Some(d) = &a.out {
        std::fs::create_dir_all(d)?;
        let sets: Vec<(u8, &[record::Record])> =
            csv.iter().map(|(v, r)| (*v, r.as_slice())).collect();
        record::write_csv(&d.join("records.csv"), &sets)?;
        std::fs::write(d.join("summary.json"), serde_json::to_vec_pretty(&doc)?)?;
    }
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}

pub fn cmd_dp(a: DpArgs) -> anyhow::Result<()> {
    check_timing(&a.timing)?;
    if a.inject_rate <= 0.0 && !a.capture {
        bail!("nothing to do: give --inject-rate R and/or --capture");
    }
    let dur = (a.timing.duration * 1e9) as u64;
    let drain = (a.timing.drain * 1e9) as u64;
    let inject_n = if a.inject_rate > 0.0 {
        a.tenants as usize
    } else {
        0
    };
    let sync = perfbench::start_sync::StartSync::new(inject_n + a.capture as usize);
    let sched = if a.inject_rate > 0.0 {
        Some(Schedule::constant(a.inject_rate)?)
    } else {
        None
    };
    let (inj, cap) = std::thread::scope(|sc| {
        let sync = &sync;
        let hs: Vec<_> = (0..inject_n as u32)
            .map(|t| {
                let (iface, sch) = (
                    a.iface.clone(),
                    sched.clone().unwrap_or(Schedule::constant(0.0).unwrap()),
                );
                sc.spawn(move || dp::inject(&iface, t, sch, a.frame_size, dur, sync))
            })
            .collect();
        let c = a.capture.then(|| {
            let iface = a.iface.clone();
            sc.spawn(move || dp::capture(&iface, dur, drain, sync))
        });
        let inj: Vec<_> = hs
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("panic"))))
            .collect();
        (
            inj,
            c.map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("panic")))),
        )
    });
    let w = Window::trimmed(
        sync.start_ns(),
        a.timing.duration,
        a.timing.warmup,
        a.timing.cooldown,
    );
    let mut injected = Vec::new();
    for r in inj {
        let r = r?;
        injected.push(serde_json::json!({
            "tenant": r.tenant,
            "sent": r.records.len(),
            "sent_in_window": r.records.iter().filter(|x| w.contains(x.req_ns)).count(),
            "send_errors": r.send_errors,
            "send_lateness_p99_us": r.lateness_p99_us,
        }));
    }
    let mut captured = Vec::new();
    let mut csv = Vec::new();
    if let Some(c) = cap {
        let c = c?;
        let mut ids: Vec<_> = c.arrivals.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let recs = record::records_with_gaps(
                &c.arrivals[&id],
                id as u16,
                perfbench::codec::types::PACKET_OUT,
                0,
            );
            captured.push(summary::summarize(
                id,
                "packet-out-received",
                0.0,
                &recs,
                &w,
            ));
            csv.push((4u8, recs));
        }
    }
    let doc = serde_json::json!({"iface": a.iface, "window": w, "injected": injected, "captured": captured});
    if let Some(d) = &a.out {
        std::fs::create_dir_all(d)?;
        let sets: Vec<(u8, &[record::Record])> =
            csv.iter().map(|(v, r)| (*v, r.as_slice())).collect();
        record::write_csv(&d.join("records.csv"), &sets)?;
        std::fs::write(d.join("summary.json"), serde_json::to_vec_pretty(&doc)?)?;
    }
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(())
}
