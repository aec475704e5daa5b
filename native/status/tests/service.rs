//! The status service on a real scheduler and a real socket: the model join, the JSON endpoint,
//! the page, the gRPC service and client, and what the listener refuses.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use streamshard_core::{Scheduler, SchedulerConfig, TaskId, TaskOptions};
use streamshard_status::model::{self, JavaView, Rates, Snapshot};
use streamshard_status::pb;
use streamshard_status::pb::{Mode, Region};
use streamshard_status::server::{self, StatusServer};

fn scheduler() -> Arc<Scheduler> {
    Arc::new(
        Scheduler::new(SchedulerConfig {
            max_inflight: 64,
            max_inflight_per_task: 32,
            max_tasks: 8,
            max_partitions_per_task: 4,
            timing_sample_shift: 0,
            ..SchedulerConfig::default()
        })
        .unwrap(),
    )
}

/// What the Java side pushes for one split task (0_0) and one stock task (1_0).
const VIEW: &str = r#"{
  "instance": {"application_id": "app", "client_id": "app-1", "state": "RUNNING",
    "kafka_streams_version": "4.3.1", "streamshard_version": "0.1.0", "workers": 4,
    "max_inflight": 64, "config": {"streamshard.workers": "4"}},
  "threads": [{"name": "app-1-StreamThread-1", "state": "RUNNING", "active_tasks": ["0_0", "1_0"]}],
  "subtopologies": [
    {"id": 0, "nodes": [
      {"name": "SRC", "kind": "source", "class": "SourceNode", "children": ["MAP"], "region": "parallel",
       "reason": "source", "topics": ["in"]},
      {"name": "MAP", "kind": "processor", "class": "KStreamMapValues", "children": ["WIN"],
       "region": "parallel", "reason": "stateless"},
      {"name": "WIN", "kind": "processor", "class": "KStreamWindowAggregate", "children": [],
       "region": "serial", "reason": "window <late> records", "stores": ["w"]}]},
    {"id": 1, "nodes": [
      {"name": "SRC1", "kind": "source", "class": "SourceNode", "children": [], "region": "stock",
       "reason": "only sources would be parallel", "topics": ["other"]}]}],
  "tasks": [
    {"id": "0_0", "subtopology": 0, "partition": 0, "thread": "app-1-StreamThread-1", "mode": "split",
     "summary": "parallel, serial region: WIN", "sharded": true, "serial_backlog": 2, "commit_backlog": 7, "held_bytes": 900, "drain_total": 4,
     "drain_time_total_ns": 8000000, "drain_time_max_ns": 5000000,
     "partitions": [{"index": 0, "topic": "in", "partition": 0, "committed": 100, "end_offset": 200}]},
    {"id": "1_0", "subtopology": 1, "partition": 0, "thread": "app-1-StreamThread-1", "mode": "stock",
     "summary": "serial: only sources would be parallel", "sharded": false,
     "partitions": [{"topic": "other", "partition": 0, "committed": 7, "end_offset": 9}]}
  ]
}"#;

/// Task 0_0 with offsets 100..110 submitted on 10 keys, 4 dispatched, 2 of them completed.
fn load(s: &Scheduler) {
    let h = s
        .register_task(
            TaskId {
                subtopology: 0,
                partition: 0,
            },
            TaskOptions::default(),
        )
        .unwrap();
    for (i, off) in (100..110).enumerate() {
        s.submit(h, 0, off, Some(i as u64), i as u32).unwrap();
    }
    let mut out = Vec::new();
    s.poll(&mut out, 4, Duration::from_millis(100)).unwrap();
    assert_eq!(out.len(), 4);
    for slot in &out[..2] {
        s.complete(*slot).unwrap();
    }
}

fn built(s: &Scheduler) -> Snapshot {
    let view: JavaView = serde_json::from_str(VIEW).unwrap();
    model::snapshot(&view, &s.metrics(), &Rates::default(), 42, |sub, part| {
        let h = s
            .find_task(TaskId {
                subtopology: sub,
                partition: part,
            })
            .unwrap();
        s.partitions(h).unwrap()
    })
}

#[test]
fn a_snapshot_joins_java_view_with_the_scheduler_counters() {
    let s = scheduler();
    load(&s);
    let snap = built(&s);
    assert_eq!(snap.taken_at_ms, 42);
    assert_eq!(snap.instance.as_ref().unwrap().client_id, "app-1");
    let im = snap.metrics.as_ref().unwrap();
    assert_eq!(im.handoffs_total, 10);
    assert_eq!(im.completed_total, 2);
    assert_eq!(im.in_flight, 2);
    assert_eq!(im.queued, 6);
    assert_eq!(im.slots_in_use, 8);
    assert_eq!(snap.tasks.len(), 2);

    let split = &snap.tasks[0];
    assert_eq!(split.mode, Mode::Split as i32);
    let m = split.metrics.as_ref().expect("a sharded task has metrics");
    assert_eq!(
        (m.handoffs_total, m.completed_total, m.in_flight, m.queued),
        (10, 2, 2, 6)
    );
    assert_eq!(m.active_keys, 8);
    assert_eq!(m.serial_backlog, 2);
    assert_eq!((m.commit_backlog, m.held_bytes), (7, 900));
    assert_eq!(m.drain_total, 4);
    assert_eq!(m.drain_time_avg_ns, Some(2_000_000.0));
    assert!(
        m.run_time_avg_ns.is_some(),
        "every record is sampled at shift 0"
    );
    let p = &split.partitions[0];
    assert_eq!(
        (p.submitted, p.finished, p.running, p.queued),
        (10, 2, 2, 6)
    );
    // Two of the first four finished: the lowest unfinished is the third record.
    assert_eq!(p.lowest_unfinished, Some(102));
    assert_eq!(p.last_submitted, Some(109));
    assert_eq!((p.committed, p.end_offset), (Some(100), Some(200)));

    let stock = &snap.tasks[1];
    assert_eq!(stock.mode, Mode::Stock as i32);
    assert!(stock.metrics.is_none());
    assert_eq!(stock.partitions[0].committed, Some(7));
    assert_eq!(stock.partitions[0].submitted, 0);
    assert_eq!(stock.partitions[0].lowest_unfinished, None);
    assert_eq!(snap.subtopologies[0].nodes[2].region, Region::Serial as i32);
    assert_eq!(snap.subtopologies[1].nodes[0].region, Region::Stock as i32);
}

#[test]
fn a_view_with_missing_fields_still_parses() {
    let v: JavaView = serde_json::from_str(r#"{"tasks": [{"id": "0_1"}]}"#).unwrap();
    assert_eq!(v.tasks[0].id, "0_1");
    assert_eq!(v.tasks[0].mode, Mode::Unspecified as i32);
    assert!(serde_json::from_str::<JavaView>("{\"tasks\": 3}").is_err());
    assert!(serde_json::from_str::<JavaView>(r#"{"tasks": [{"mode": "fast"}]}"#).is_err());
}

#[test]
fn the_json_names_enums_and_round_trips() {
    let s = scheduler();
    load(&s);
    let snap = built(&s);
    let json = serde_json::to_value(&snap).unwrap();
    assert_eq!(json["tasks"][0]["mode"], "split");
    assert_eq!(json["tasks"][1]["metrics"], serde_json::Value::Null);
    assert_eq!(json["subtopologies"][0]["nodes"][2]["region"], "serial");
    assert_eq!(
        json["subtopologies"][0]["nodes"][2]["class"],
        "KStreamWindowAggregate"
    );
    assert_eq!(json["instance"]["config"]["streamshard.workers"], "4");
    let back: Snapshot = serde_json::from_value(json).unwrap();
    assert_eq!(back, snap);
}

#[test]
fn rates_are_per_second_between_two_readings() {
    let s = scheduler();
    let before = s.metrics();
    load(&s);
    let after = s.metrics();
    let r = Rates::between(&before, &after, 2.0);
    assert_eq!(r.handoffs_per_sec, 5.0);
    assert_eq!(r.completed_per_sec, 1.0);
    assert_eq!(r.task_completed_per_sec[&(0, 0)], 1.0);
    assert_eq!(Rates::between(&before, &after, 0.0), Rates::default());
}

#[test]
fn the_listener_binds_to_loopback_unless_told_otherwise() {
    assert!(server::resolve("127.0.0.1:0", false).is_ok());
    assert!(server::resolve("[::1]:0", false).is_ok());
    assert!(server::resolve("localhost:0", false).is_ok());
    let e = server::resolve("0.0.0.0:7071", false).unwrap_err();
    assert!(
        e.contains("not a loopback address") && e.contains("streamshard.status.allow.remote"),
        "{e}"
    );
    assert!(server::resolve("0.0.0.0:0", true).is_ok());
    assert!(server::resolve("no-port", false).is_err());
    assert!(server::resolve("127.0.0.1:99999", false).is_err());
    assert!(StatusServer::start("0.0.0.0:0", false, scheduler()).is_err());
}

#[test]
fn watch_intervals_are_clamped() {
    assert_eq!(server::watch_interval(0), Duration::from_secs(1));
    assert_eq!(server::watch_interval(1), Duration::from_millis(100));
    assert_eq!(server::watch_interval(250), Duration::from_millis(250));
    assert_eq!(server::watch_interval(u32::MAX), Duration::from_secs(60));
}

/// One HTTP/1.1 exchange; returns (status code, head, body).
fn http(addr: std::net::SocketAddr, request: &str) -> (u16, String, String) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = c.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head.to_string(), body.to_string())
}

fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
    http(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    )
}

fn running() -> (Arc<Scheduler>, StatusServer) {
    let s = scheduler();
    load(&s);
    let srv = StatusServer::start("127.0.0.1:0", false, s.clone()).unwrap();
    srv.push(VIEW).unwrap();
    (s, srv)
}

#[test]
fn the_page_and_the_json_endpoint_are_served() {
    let (_s, srv) = running();
    let addr = srv.local_addr();
    let (code, head, body) = get(addr, "/");
    assert_eq!(code, 200, "{head}");
    let head = head.to_ascii_lowercase();
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(
        head.contains("content-security-policy: default-src 'none'"),
        "{head}"
    );
    assert!(body.contains("streamshard"));
    assert_eq!(body.len(), server::PAGE.len());

    let (code, head, body) = get(addr, "/api/status");
    assert_eq!(code, 200, "{head}");
    assert!(head.to_ascii_lowercase().contains("application/json"));
    // Chunked or not, the body's JSON object is the snapshot.
    let json = &body[body.find('{').unwrap()..=body.rfind('}').unwrap()];
    let snap: Snapshot = serde_json::from_str(json).unwrap();
    assert_eq!(snap.tasks.len(), 2);
    assert_eq!(snap.tasks[0].partitions[0].lowest_unfinished, Some(102));
    assert!(snap.taken_at_ms > 1_700_000_000_000);
    assert_eq!(srv.snapshot().tasks, snap.tasks);
}

#[test]
fn only_reads_are_served_and_bad_requests_do_not_hurt_it() {
    let (_s, srv) = running();
    let addr = srv.local_addr();
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        let (code, head, _) = http(
            addr,
            &format!("{method} /api/status HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"),
        );
        assert_eq!(code, 405, "{method}: {head}");
    }
    assert_eq!(get(addr, "/../../etc/passwd").0, 404);
    assert_eq!(get(addr, "/api/status/x").0, 404);
    // Not HTTP at all.
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(&[0xff; 4096]).unwrap();
    drop(c);
    // A gRPC call whose body is not a gRPC frame.
    let (_, head, _) = http(
        addr,
        "POST /streamshard.v1.Status/GetStatus HTTP/1.1\r\nHost: x\r\nContent-Type: application/grpc\r\nTE: trailers\r\nContent-Length: 5\r\nConnection: close\r\n\r\n\x00\x00\x00\x00\x09",
    );
    // tonic answers with a gRPC error status (13: the frame is incomplete), never OK.
    let status = head
        .lines()
        .find_map(|l| l.strip_prefix("grpc-status: "))
        .and_then(|v| v.trim().parse::<i32>().ok());
    assert!(matches!(status, Some(s) if s != 0), "{head}");
    // A push Java never sends is refused; the old view stays.
    assert!(srv.push("not json").is_err());
    // Still serving.
    assert_eq!(get(addr, "/api/status").0, 200);
}

#[test]
fn the_grpc_service_and_the_client_agree_with_the_json() {
    let (_s, srv) = running();
    let url = format!("http://{}", srv.local_addr());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut client = pb::status_client::StatusClient::connect(url).await.unwrap();
        let one = client
            .get_status(pb::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(one.tasks, srv.snapshot().tasks);
        assert_eq!(one.instance.unwrap().config["streamshard.workers"], "4");

        let mut watch = client
            .watch_status(pb::WatchStatusRequest { interval_ms: 100 })
            .await
            .unwrap()
            .into_inner();
        let a = watch.message().await.unwrap().unwrap();
        let b = watch.message().await.unwrap().unwrap();
        assert!(b.taken_at_ms >= a.taken_at_ms);
        assert_eq!(b.tasks.len(), 2);
    });
}

#[test]
fn too_many_watchers_are_refused_and_stop_ends_the_streams() {
    let (_s, srv) = running();
    let url = format!("http://{}", srv.local_addr());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut streams = Vec::new();
    rt.block_on(async {
        let mut client = pb::status_client::StatusClient::connect(url).await.unwrap();
        for _ in 0..server::MAX_WATCHERS {
            let mut w = client
                .watch_status(pb::WatchStatusRequest {
                    interval_ms: 60_000,
                })
                .await
                .unwrap()
                .into_inner();
            w.message().await.unwrap().unwrap();
            streams.push(w);
        }
        let refused = client
            .watch_status(pb::WatchStatusRequest { interval_ms: 1000 })
            .await;
        let code = match refused {
            Err(e) => e.code(),
            Ok(r) => r.into_inner().message().await.unwrap_err().code(),
        };
        assert_eq!(code, tonic::Code::ResourceExhausted);
    });
    srv.stop();
    rt.block_on(async {
        for mut w in streams {
            let end = tokio::time::timeout(Duration::from_secs(5), w.message()).await;
            assert!(
                matches!(end, Ok(Err(_)) | Ok(Ok(None))),
                "a watch outlived the listener"
            );
        }
    });
}

#[test]
fn the_table_names_every_task_partition_and_serial_node() {
    let s = scheduler();
    load(&s);
    let text = streamshard_status::table::render(&built(&s));
    assert!(
        text.starts_with("app (app-1) RUNNING · Kafka Streams 4.3.1"),
        "{text}"
    );
    assert!(text.contains("slots 8/64"), "{text}");
    let row = text.lines().find(|l| l.starts_with("0_0 ")).unwrap();
    assert!(
        row.contains("StreamThread-1") && row.contains("split"),
        "{row}"
    );
    let stock = text.lines().find(|l| l.starts_with("1_0 ")).unwrap();
    assert!(stock.contains("stock") && stock.contains(" - "), "{stock}");
    let part = text.lines().find(|l| l.contains("in-0")).unwrap();
    assert_eq!(
        part.split_whitespace().collect::<Vec<_>>(),
        ["0_0", "in-0", "100", "102", "109", "200", "10", "2"]
    );
    assert!(text.contains("sub-topology 0: 2 parallel, 1 serial region, 0 stock"));
    assert!(text.contains("  WIN (KStreamWindowAggregate): window <late> records"));
}

#[test]
fn the_table_shows_an_adaptive_limit_and_its_last_change() {
    let s = scheduler();
    load(&s);
    let mut snap = built(&s);
    assert!(
        streamshard_status::table::render(&snap).contains("workers 4 · "),
        "a fixed number as it is"
    );
    let i = snap.instance.as_mut().unwrap();
    i.workers_limit = Some(3);
    let text = streamshard_status::table::render(&snap);
    assert!(text.contains("workers 3 of 4 (auto) · "), "{text}");
    let i = snap.instance.as_mut().unwrap();
    i.workers_limit_change = "latency 2.1× baseline: 4 → 3".into();
    let text = streamshard_status::table::render(&snap);
    assert!(
        text.contains("workers 3 of 4 (auto; last: latency 2.1× baseline: 4 → 3) · "),
        "{text}"
    );
    // What Java pushes for it parses into the served instance.
    let view: streamshard_status::model::JavaView = serde_json::from_str(&VIEW.replace(
        "\"max_inflight\": 64,",
        "\"max_inflight\": 64, \"workers_limit\": 3, \"workers_limit_change\": \"x\",",
    ))
    .unwrap();
    assert_eq!(view.instance.workers_limit, Some(3));
    assert_eq!(view.instance.workers_limit_change, "x");
}
