//! A snapshot as text, for the command-line client.

use std::fmt::Write as _;

use crate::model::Snapshot;
use crate::names;
use crate::pb::Region;

fn ms(ns: Option<f64>) -> String {
    ns.map_or_else(|| "-".into(), |v| format!("{:.2}", v / 1e6))
}

fn ms_u(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1e6)
}

fn opt(v: Option<i64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// Left-aligned columns, two spaces apart.
fn columns(out: &mut String, rows: &[Vec<String>]) {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                let _ = write!(line, "{c:<w$}  ", w = widths[i]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// The whole snapshot: instance line, metrics line, tasks, partitions, serial regions.
pub fn render(s: &Snapshot) -> String {
    let i = s.instance.clone().unwrap_or_default();
    let m = s.metrics.unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}) {} · Kafka Streams {} · streamshard {}",
        i.application_id, i.client_id, i.state, i.kafka_streams_version, i.streamshard_version
    );
    let workers = match i.workers_limit {
        Some(limit) if i.workers_limit_change.is_empty() => {
            format!("{limit} of {} (auto)", m.workers)
        }
        Some(limit) => format!(
            "{limit} of {} (auto; last: {})",
            m.workers, i.workers_limit_change
        ),
        None => m.workers.to_string(),
    };
    let _ = writeln!(
        out,
        "workers {} · in flight {} · queued {} · slots {}/{} · hand-offs {:.0}/s · completed {:.0}/s · failed {} · wait avg {} ms · run avg {} ms",
        workers,
        m.in_flight,
        m.queued,
        m.slots_in_use,
        i.max_inflight,
        m.handoffs_per_sec,
        m.completed_per_sec,
        m.failed_total,
        ms(m.wait_time_avg_ns),
        ms(m.run_time_avg_ns)
    );
    out.push('\n');
    let prefix = format!("{}-", i.client_id);
    let mut rows = vec![[
        "TASK",
        "THREAD",
        "MODE",
        "QUEUED",
        "IN-FLIGHT",
        "DONE/S",
        "DONE",
        "FAILED",
        "RETRIES",
        "BACKOFF",
        "KEYS",
        "DEEPEST",
        "WAIT-MS",
        "RUN-MS",
        "BACKLOG",
        "DRAINS",
        "DRAIN-MAX-MS",
    ]
    .map(String::from)
    .to_vec()];
    for t in &s.tasks {
        let thread = t
            .thread
            .strip_prefix(&prefix)
            .unwrap_or(&t.thread)
            .to_string();
        let mut row = vec![t.id.clone(), thread, names::mode::name(t.mode).into()];
        match &t.metrics {
            Some(x) => row.extend([
                x.queued.to_string(),
                x.in_flight.to_string(),
                format!("{:.0}", x.completed_per_sec),
                x.completed_total.to_string(),
                x.failed_total.to_string(),
                x.retries_total.to_string(),
                x.in_backoff.to_string(),
                x.active_keys.to_string(),
                x.deepest_key_queue.to_string(),
                ms(x.wait_time_avg_ns),
                ms(x.run_time_avg_ns),
                x.serial_backlog.to_string(),
                x.drain_total.to_string(),
                ms_u(x.drain_time_max_ns),
            ]),
            None => row.extend(std::iter::repeat_n("-".to_string(), 14)),
        }
        rows.push(row);
    }
    columns(&mut out, &rows);
    out.push('\n');
    let mut rows = vec![[
        "TASK",
        "PARTITION",
        "COMMITTED",
        "LOWEST-UNFINISHED",
        "LAST-SUBMITTED",
        "END",
        "SUBMITTED",
        "FINISHED",
    ]
    .map(String::from)
    .to_vec()];
    for t in &s.tasks {
        for p in &t.partitions {
            rows.push(vec![
                t.id.clone(),
                format!("{}-{}", p.topic, p.partition),
                opt(p.committed),
                opt(p.lowest_unfinished),
                opt(p.last_submitted),
                opt(p.end_offset),
                p.submitted.to_string(),
                p.finished.to_string(),
            ]);
        }
    }
    columns(&mut out, &rows);
    out.push('\n');
    for st in &s.subtopologies {
        let count = |r: Region| st.nodes.iter().filter(|n| n.region == r as i32).count();
        let _ = writeln!(
            out,
            "sub-topology {}: {} parallel, {} serial region, {} stock",
            st.id,
            count(Region::Parallel),
            count(Region::Serial),
            count(Region::Stock)
        );
        for n in st
            .nodes
            .iter()
            .filter(|n| n.region != Region::Parallel as i32)
        {
            let _ = writeln!(out, "  {} ({}): {}", n.name, n.class_name, n.reason);
        }
    }
    out
}
