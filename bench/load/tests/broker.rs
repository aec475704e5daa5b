//! End to end against a real broker: create, produce (twice, continuing the sequences through
//! the state file), copy input to output like a benchmark app would, wait for the copying group,
//! and verify, once with a complete copy and once with a record dropped.
//!
//! Runs only when `STREAMSHARD_BOOTSTRAP` names a broker, e.g. after
//! `BROKER_PORT=19392 bash tests/broker/broker.sh start`:
//! `STREAMSHARD_BOOTSTRAP=127.0.0.1:19392 cargo test -p streamshard-load --test broker`.

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::executor::block_on;
use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::Value;

fn run(args: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_streamshard-load"))
        .args(args)
        .output()
        .expect("run streamshard-load");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stdout.lines().last().unwrap_or_else(|| {
        panic!("no output from {args:?}; stderr:\n{stderr}");
    });
    let json: Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{args:?} printed {last:?}, not JSON ({e}); stderr:\n{stderr}"));
    eprintln!("{args:?} -> {:?} {json}", out.status.code());
    (out.status.code().unwrap_or(-1), json)
}

fn config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("allow.auto.create.topics", "false");
    c
}

/// Copies every record of `input` to `output` (same key and value) in one transaction, leaving
/// out the record at position `skip` of the copy order; returns the copied (key, value) pairs.
/// With `group`, commits the input end offsets to that group afterwards.
fn copy(
    bootstrap: &str,
    input: &str,
    output: &str,
    skip: Option<usize>,
    group: &str,
) -> Vec<(String, String)> {
    let consumer: BaseConsumer = config(bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    let md = consumer
        .fetch_metadata(Some(input), Duration::from_secs(10))
        .unwrap();
    let partitions: Vec<i32> = md.topics()[0].partitions().iter().map(|p| p.id()).collect();
    let mut assignment = TopicPartitionList::new();
    let mut commit = TopicPartitionList::new();
    let mut expected = 0;
    for &p in &partitions {
        let (low, high) = consumer
            .fetch_watermarks(input, p, Duration::from_secs(10))
            .unwrap();
        expected += high - low;
        assignment
            .add_partition_offset(input, p, Offset::Beginning)
            .unwrap();
        commit
            .add_partition_offset(input, p, Offset::Offset(high))
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();

    let producer: BaseProducer = config(bootstrap)
        .set("partitioner", "murmur2_random")
        .set("transactional.id", format!("{group}-tx"))
        .create()
        .unwrap();
    producer.init_transactions(Duration::from_secs(30)).unwrap();
    producer.begin_transaction().unwrap();
    let mut copied = Vec::new();
    let mut seen = 0usize;
    let deadline = Instant::now() + Duration::from_secs(60);
    while (seen as i64) < expected {
        assert!(Instant::now() < deadline, "copy: {seen} of {expected} read");
        let Some(m) = consumer.poll(Duration::from_millis(200)) else {
            continue;
        };
        let m = m.unwrap();
        let key = String::from_utf8(m.key().unwrap().to_vec()).unwrap();
        let value = String::from_utf8(m.payload().unwrap().to_vec()).unwrap();
        seen += 1;
        if Some(seen - 1) == skip {
            continue;
        }
        producer
            .send(BaseRecord::to(output).key(&key).payload(&value))
            .unwrap();
        producer.poll(Duration::ZERO);
        copied.push((key, value));
    }
    producer
        .commit_transaction(Duration::from_secs(30))
        .unwrap();
    consumer.commit(&commit, CommitMode::Sync).unwrap();
    copied
}

/// Writes running counts of the copied records' keys to `counts` (the last one is the total).
fn write_counts(bootstrap: &str, counts: &str, copied: &[(String, String)]) {
    let producer: BaseProducer = config(bootstrap)
        .set("partitioner", "murmur2_random")
        .set("enable.idempotence", "true")
        .create()
        .unwrap();
    let mut running: HashMap<&str, u64> = HashMap::new();
    for (key, _) in copied {
        let n = running.entry(key.as_str()).or_default();
        *n += 1;
        let value = n.to_string();
        producer
            .send(BaseRecord::to(counts).key(key.as_str()).payload(&value))
            .unwrap();
        producer.poll(Duration::ZERO);
    }
    producer.flush(Duration::from_secs(30)).unwrap();
}

fn state_total(path: &std::path::Path) -> u64 {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["next_seq"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum()
}

#[test]
fn produce_copy_wait_verify() {
    let Ok(bootstrap) = std::env::var("STREAMSHARD_BOOTSTRAP") else {
        eprintln!("skipped: set STREAMSHARD_BOOTSTRAP=host:port to run against a broker");
        return;
    };
    let b = bootstrap.as_str();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let suffix = format!("{}-{nanos}", std::process::id());
    let input = format!("load-it-in-{suffix}");
    let output = format!("load-it-out-{suffix}");
    let dropped = format!("load-it-dropped-{suffix}");
    let counts = format!("load-it-counts-{suffix}");
    let state = std::env::temp_dir().join(format!("load-it-state-{suffix}.json"));

    let create = |topic: &str, partitions: &str, extra: &[&str]| {
        let mut args = vec![
            "create",
            "--brokers",
            b,
            "--topic",
            topic,
            "--partitions",
            partitions,
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    let (code, j) = create(&input, "4", &[]);
    assert_eq!((code, j["created"].as_bool()), (0, Some(true)));
    let (code, j) = create(&input, "4", &[]);
    assert_eq!((code, j["created"].as_bool()), (0, Some(false)), "exists");
    for t in [&output, &dropped] {
        let (code, j) = create(
            t,
            "4",
            &["--config", "message.timestamp.type=LogAppendTime"],
        );
        assert_eq!((code, j["partitions"].as_u64()), (0, Some(4)));
    }
    let (code, _) = create(&counts, "2", &[]);
    assert_eq!(code, 0);

    let state_arg = state.to_str().unwrap();
    let produce = |records: &str, seed: &str| {
        run(&[
            "produce",
            "--brokers",
            b,
            "--topic",
            &input,
            "--records",
            records,
            "--keys",
            "100",
            "--dist",
            "zipf:1.1",
            "--payload",
            "64",
            "--seed",
            seed,
            "--state",
            state_arg,
        ])
    };
    let (code, j) = produce("2000", "42");
    assert_eq!((code, j["records"].as_u64()), (0, Some(2000)));
    assert_eq!(state_total(&state), 2000);
    let (code, j) = produce("500", "43");
    assert_eq!((code, j["records"].as_u64()), (0, Some(500)));
    assert_eq!(state_total(&state), 2500);
    let second_run_us = j["first_produced_us"].as_i64().unwrap();

    let copy_group = format!("load-it-copy-{suffix}");
    let copied = copy(b, &input, &output, None, &copy_group);
    assert_eq!(copied.len(), 2500);
    write_counts(b, &counts, &copied);

    let (code, j) = run(&[
        "wait",
        "--brokers",
        b,
        "--group",
        &copy_group,
        "--topic",
        &input,
        "--timeout-s",
        "30",
    ]);
    assert_eq!((code, j["committed"].as_i64()), (0, Some(2500)), "{j}");
    let (code, j) = run(&[
        "wait",
        "--brokers",
        b,
        "--group",
        &format!("load-it-idle-{suffix}"),
        "--topic",
        &input,
        "--timeout-s",
        "0.3",
    ]);
    assert_eq!(code, 2, "a group that never committed times out: {j}");
    assert_eq!(j["end"].as_i64(), Some(2500));

    let second_run = second_run_us.to_string();
    let (code, j) = run(&[
        "verify",
        "--brokers",
        b,
        "--input",
        &input,
        "--output",
        &output,
        "--counts",
        &counts,
        "--latency-after-us",
        &second_run,
    ]);
    assert_eq!(code, 0, "{j}");
    assert_eq!(j["ok"], Value::Bool(true));
    assert_eq!(j["input"].as_u64(), Some(2500));
    assert_eq!(j["output"].as_u64(), Some(2500));
    for field in ["missing", "duplicates", "order_violations", "unexpected"] {
        assert_eq!(j[field].as_u64(), Some(0), "{field}: {j}");
    }
    assert_eq!(j["counts_checked"], Value::Bool(true));
    assert_eq!(j["count_mismatches"].as_u64(), Some(0));
    assert!(j["rate_rps"].as_f64().is_some_and(|r| r > 0.0), "{j}");
    assert_eq!(j["latency_ms"]["n"].as_u64(), Some(500), "{j}");

    copy(b, &input, &dropped, Some(1234), &format!("{copy_group}-2"));
    let (code, j) = run(&[
        "verify",
        "--brokers",
        b,
        "--input",
        &input,
        "--output",
        &dropped,
    ]);
    assert_eq!(code, 1, "{j}");
    assert_eq!(j["ok"], Value::Bool(false));
    assert_eq!(j["missing"].as_u64(), Some(1), "{j}");
    assert_eq!(j["output"].as_u64(), Some(2499));
    assert_eq!(j["duplicates"].as_u64(), Some(0));
    assert_eq!(j["order_violations"].as_u64(), Some(0));

    // Best-effort cleanup.
    let _ = std::fs::remove_file(&state);
    let admin: AdminClient<DefaultClientContext> = config(b).create().unwrap();
    let topics = [&input, &output, &dropped, &counts].map(String::as_str);
    let _ = block_on(admin.delete_topics(&topics, &AdminOptions::new()));
}
