//! `streamshard-load`: creates topics, produces keyed sequence-numbered records, waits for a
//! consumer group to catch up, and verifies an output topic against its input. Every subcommand
//! prints one JSON object on stdout as its last line; logs go to stderr. See README.md.

mod kafka;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Args, Parser, Subcommand};
use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::{Offset, TopicPartitionList};
use serde_json::{json, Value};

use streamshard_load::{encode_value_into, parse_dist, SeqState, Verifier, VerifyOptions};

use kafka::{base_config, create_topic, read_topic, topic_partitions, ReadError, REQUEST_TIMEOUT};

/// Exit code of a `wait` that timed out.
const EXIT_WAIT_TIMEOUT: u8 = 2;
/// Exit code of a `verify` that could not read a topic to its end in time.
const EXIT_READ_TIMEOUT: u8 = 3;
/// Exit code of a command line clap refuses (clap's own 2 would read as a `wait` timeout).
const EXIT_USAGE: u8 = 64;
/// How long `verify` may spend reading all its topics.
const VERIFY_READ_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Parser)]
#[command(
    name = "streamshard-load",
    version,
    about = "Load generator and verifier for streamshard Kafka benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct Common {
    /// Kafka bootstrap servers.
    #[arg(long, default_value = "127.0.0.1:9092")]
    brokers: String,
}

#[derive(Subcommand)]
enum Command {
    /// Create a topic (replication 1) unless it exists; wait until every partition has a leader.
    Create {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        topic: String,
        #[arg(long)]
        partitions: i32,
        /// A topic config, `key=value`; repeatable.
        #[arg(long = "config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
    },
    /// Produce keyed, per-key sequence-numbered records.
    Produce(ProduceSpec),
    /// Wait until a group's committed offsets reach the end offsets of every partition.
    Wait {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        group: String,
        #[arg(long)]
        topic: String,
        #[arg(long = "timeout-s", default_value_t = 300.0)]
        timeout_s: f64,
    },
    /// Check an output topic against the input topic (and optionally a counts topic).
    Verify {
        #[command(flatten)]
        common: Common,
        #[arg(long)]
        input: String,
        #[arg(long)]
        output: String,
        #[arg(long)]
        counts: Option<String>,
        /// A totals topic: the last value per key must be the sum of `seq + 1` over its input.
        #[arg(long)]
        totals: Option<String>,
        /// Counts and totals may exceed the input's (at-least-once replays); fewer still fails.
        #[arg(long)]
        min_counts: bool,
        /// Records produced before this time (µs since the epoch) count for throughput, the
        /// others for latency.
        #[arg(long = "latency-after-us")]
        latency_after_us: Option<i64>,
        /// Duplicates do not fail the check (at-least-once runs).
        #[arg(long)]
        allow_duplicates: bool,
        /// The application's producer lost output sends (expired batches, logged by the app):
        /// a late record followed by a replay of the record it came after is not an order
        /// violation (it is counted as `late_replayed`).
        #[arg(long)]
        lost_sends: bool,
        /// The output is a table's changelog: updates superseded before they came out are not
        /// missing, as long as each key's last input record is output.
        #[arg(long)]
        table: bool,
    },
}

/// A failed command: its exit code and the JSON it prints.
struct Failure {
    code: u8,
    json: Value,
}

impl Failure {
    fn new(code: u8, message: impl Into<String>) -> Self {
        Failure {
            code,
            json: json!({ "ok": false, "error": message.into() }),
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::new(1, message)
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let usage = e.use_stderr();
            let _ = e.print();
            if !usage {
                // --help or --version.
                return ExitCode::SUCCESS;
            }
            println!("{}", json!({ "ok": false, "error": "bad command line" }));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let result = match cli.command {
        Command::Create {
            common,
            topic,
            partitions,
            configs,
        } => cmd_create(&common.brokers, &topic, partitions, &configs),
        Command::Produce(spec) => cmd_produce(&spec),
        Command::Wait {
            common,
            group,
            topic,
            timeout_s,
        } => cmd_wait(&common.brokers, &group, &topic, timeout_s),
        Command::Verify {
            common,
            input,
            output,
            counts,
            totals,
            min_counts,
            latency_after_us,
            allow_duplicates,
            lost_sends,
            table,
        } => cmd_verify(
            &common.brokers,
            &input,
            &output,
            counts.as_deref(),
            totals.as_deref(),
            VerifyOptions {
                latency_after_us,
                allow_duplicates,
                min_counts,
                lost_sends,
                table,
            },
        ),
    };
    match result {
        Ok((code, json)) => {
            println!("{json}");
            ExitCode::from(code)
        }
        Err(f) => {
            if let Some(e) = f.json.get("error").and_then(Value::as_str) {
                eprintln!("streamshard-load: error: {e}");
            }
            println!("{}", f.json);
            ExitCode::from(f.code)
        }
    }
}

type CmdResult = Result<(u8, Value), Failure>;

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn cmd_create(brokers: &str, topic: &str, partitions: i32, configs: &[String]) -> CmdResult {
    if partitions < 1 {
        return Err("--partitions must be at least 1".to_string().into());
    }
    let mut pairs = Vec::new();
    for c in configs {
        let (k, v) = c
            .split_once('=')
            .ok_or_else(|| format!("--config {c}: expected key=value"))?;
        pairs.push((k.trim().to_string(), v.trim().to_string()));
    }
    let (created, count) = create_topic(brokers, topic, partitions, &pairs)?;
    eprintln!(
        "streamshard-load: topic {topic} {} ({count} partitions)",
        if created { "created" } else { "already exists" }
    );
    Ok((
        0,
        json!({ "topic": topic, "created": created, "partitions": count }),
    ))
}

#[derive(Args)]
struct ProduceSpec {
    #[command(flatten)]
    common: Common,
    #[arg(long)]
    topic: String,
    /// Number of records.
    #[arg(long)]
    records: u64,
    /// Number of distinct keys (k0 .. k<keys-1>).
    #[arg(long)]
    keys: u64,
    /// Key distribution: uniform, zipf:S or hot:SHARE.
    #[arg(long, default_value = "uniform")]
    dist: String,
    /// Value size in bytes (padded with 'x').
    #[arg(long, default_value_t = 100)]
    payload: usize,
    /// Records per second (0: unlimited).
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// JSON file with the next sequence number of every key, read if it exists and written
    /// after a successful run.
    #[arg(long)]
    state: Option<PathBuf>,
    /// Create the topic with this many partitions if it does not exist.
    #[arg(long)]
    partitions: Option<i32>,
}

/// Counts deliveries and keeps the first delivery error.
#[derive(Default)]
struct DeliveryTracker {
    delivered: AtomicU64,
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl ClientContext for DeliveryTracker {}

impl ProducerContext for DeliveryTracker {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => {
                self.delivered.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, m)) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
                if first.is_none() {
                    let key = m.key().map(String::from_utf8_lossy).unwrap_or_default();
                    *first = Some(format!("delivery of a record of key {key} failed: {e}"));
                }
            }
        }
    }
}

fn cmd_produce(spec: &ProduceSpec) -> CmdResult {
    let dist = parse_dist(&spec.dist, spec.keys)?;
    if !(spec.rate.is_finite() && spec.rate >= 0.0) {
        return Err(format!("--rate must be >= 0, got {}", spec.rate).into());
    }
    let mut sampler = dist.sampler(spec.seed)?;
    let mut state = match &spec.state {
        Some(path) => SeqState::load(path)?,
        None => SeqState::default(),
    };
    let result = produce_records(spec, &mut sampler, &mut state);
    // Saved whatever happened: a record that failed may still have reached the topic, so its
    // sequence number is never given out again (a gap in a key's sequence is harmless: verify
    // reads the input topic itself).
    if let Some(path) = &spec.state {
        state.save(path)?;
    }
    result
}

fn produce_records(
    spec: &ProduceSpec,
    sampler: &mut streamshard_workload::KeySampler,
    state: &mut SeqState,
) -> CmdResult {
    let topic = spec.topic.as_str();

    let producer: BaseProducer<DeliveryTracker> = base_config(&spec.common.brokers)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("partitioner", "murmur2_random")
        .set("linger.ms", "5")
        .create_with_context(DeliveryTracker::default())
        .map_err(|e| format!("producer: {e}"))?;
    if topic_partitions(producer.client(), topic)?.is_none() {
        match spec.partitions {
            Some(p) => {
                cmd_create(&spec.common.brokers, topic, p, &[])?;
            }
            None => {
                return Err(format!(
                    "topic {topic} does not exist (pass --partitions to create it)"
                )
                .into())
            }
        }
    }

    eprintln!(
        "streamshard-load: producing {} records to {topic} ({} keys, {}, payload {} B, rate {})",
        spec.records,
        spec.keys,
        spec.dist,
        spec.payload,
        if spec.rate > 0.0 {
            format!("{}/s", spec.rate)
        } else {
            "unlimited".into()
        }
    );
    let start = Instant::now();
    let mut key = String::new();
    let mut value = String::with_capacity(spec.payload.max(32));
    let mut first_us = None;
    let mut last_us = None;
    for i in 0..spec.records {
        if spec.rate > 0.0 {
            let due = start + Duration::from_secs_f64(i as f64 / spec.rate);
            loop {
                let now = Instant::now();
                if now >= due {
                    break;
                }
                producer.poll(due - now);
            }
        }
        let id = sampler.next_key();
        let seq = state.take(id);
        key.clear();
        key.push('k');
        key.push_str(&id.to_string());
        loop {
            let produced_us = now_us();
            encode_value_into(&mut value, seq, produced_us, spec.payload);
            let record = BaseRecord::to(topic)
                .key(key.as_str())
                .payload(value.as_str());
            match producer.send(record) {
                Ok(()) => {
                    first_us.get_or_insert(produced_us);
                    last_us = Some(produced_us);
                    break;
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    producer.poll(Duration::from_millis(50));
                }
                Err((e, _)) => return Err(format!("produce to {topic}: {e}").into()),
            }
        }
        producer.poll(Duration::ZERO);
        let failed = producer.context().failed.load(Ordering::Relaxed);
        if failed > 0 {
            break;
        }
    }
    // Wait for every delivery report (rdkafka's flush() polls in 100 ms steps, which would
    // distort `seconds` on short runs).
    let drain_deadline = Instant::now() + Duration::from_secs(600);
    while producer.in_flight_count() > 0 {
        if Instant::now() >= drain_deadline {
            return Err(format!(
                "{} records to {topic} still undelivered after 600s",
                producer.in_flight_count()
            )
            .into());
        }
        producer.poll(Duration::from_millis(1));
    }
    producer
        .flush(Duration::from_secs(10))
        .map_err(|e| format!("flush to {topic}: {e}"))?;
    let seconds = start.elapsed().as_secs_f64();
    let tracker = producer.context();
    if tracker.failed.load(Ordering::Relaxed) > 0 {
        let first = tracker
            .first_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_default();
        return Err(Failure {
            code: 1,
            json: json!({
                "ok": false,
                "error": first,
                "delivered": tracker.delivered.load(Ordering::Relaxed),
                "failed": tracker.failed.load(Ordering::Relaxed),
            }),
        });
    }
    let delivered = tracker.delivered.load(Ordering::Relaxed);
    if delivered != spec.records {
        return Err(format!("{delivered} of {} records delivered", spec.records).into());
    }
    let rate = if seconds > 0.0 {
        spec.records as f64 / seconds
    } else {
        0.0
    };
    eprintln!("streamshard-load: {delivered} records delivered in {seconds:.3}s");
    Ok((
        0,
        json!({
            "records": spec.records,
            "seconds": round3(seconds),
            "rate": round3(rate),
            "first_produced_us": first_us,
            "last_produced_us": last_us,
        }),
    ))
}

/// One poll of `wait`: (partition, committed, end) for every partition.
fn committed_vs_end(
    consumer: &BaseConsumer,
    topic: &str,
    partitions: &[i32],
) -> Result<Vec<(i32, i64, i64)>, String> {
    let mut tpl = TopicPartitionList::new();
    for &p in partitions {
        tpl.add_partition(topic, p);
    }
    let committed = consumer
        .committed_offsets(tpl, REQUEST_TIMEOUT)
        .map_err(|e| format!("committed offsets: {e}"))?;
    let mut rows = Vec::with_capacity(partitions.len());
    for &p in partitions {
        let (_, end) = consumer
            .fetch_watermarks(topic, p, REQUEST_TIMEOUT)
            .map_err(|e| format!("end offset of {topic}/{p}: {e}"))?;
        let c = match committed.find_partition(topic, p).map(|e| e.offset()) {
            Some(Offset::Offset(o)) => o,
            _ => 0,
        };
        rows.push((p, c, end));
    }
    Ok(rows)
}

fn cmd_wait(brokers: &str, group: &str, topic: &str, timeout_s: f64) -> CmdResult {
    if !(timeout_s.is_finite() && timeout_s >= 0.0) {
        return Err(format!("--timeout-s must be >= 0, got {timeout_s}").into());
    }
    let consumer: BaseConsumer = base_config(brokers)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .map_err(|e| format!("consumer: {e}"))?;
    let partitions = topic_partitions(consumer.client(), topic)?
        .ok_or_else(|| format!("topic {topic} does not exist"))?;
    let start = Instant::now();
    let timeout = Duration::from_secs_f64(timeout_s);
    let mut last: Option<Vec<(i32, i64, i64)>> = None;
    let mut last_error = None;
    loop {
        match committed_vs_end(&consumer, topic, &partitions) {
            Ok(rows) => {
                if rows.iter().all(|&(_, c, e)| c >= e) {
                    let committed: i64 = rows.iter().map(|r| r.1).sum();
                    return Ok((
                        0,
                        json!({
                            "waited_s": round3(start.elapsed().as_secs_f64()),
                            "committed": committed,
                        }),
                    ));
                }
                last = Some(rows);
            }
            Err(e) => {
                eprintln!("streamshard-load: wait: {e}");
                last_error = Some(e);
            }
        }
        if start.elapsed() >= timeout {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let rows = last.unwrap_or_default();
    let per_partition: Vec<Value> = rows
        .iter()
        .map(|&(p, c, e)| json!({ "partition": p, "committed": c, "end": e }))
        .collect();
    Err(Failure {
        code: EXIT_WAIT_TIMEOUT,
        json: json!({
            "ok": false,
            "error": format!("group {group} did not reach the end of {topic} within {timeout_s}s"),
            "waited_s": round3(start.elapsed().as_secs_f64()),
            "committed": rows.iter().map(|r| r.1).sum::<i64>(),
            "end": rows.iter().map(|r| r.2).sum::<i64>(),
            "partitions": per_partition,
            "last_error": last_error,
        }),
    })
}

fn read_failure(e: ReadError) -> Failure {
    match e {
        ReadError::Timeout(m) => Failure {
            code: EXIT_READ_TIMEOUT,
            json: json!({ "ok": false, "timeout": true, "error": m }),
        },
        ReadError::Other(m) => Failure::new(1, m),
    }
}

fn cmd_verify(
    brokers: &str,
    input: &str,
    output: &str,
    counts: Option<&str>,
    totals: Option<&str>,
    opts: VerifyOptions,
) -> CmdResult {
    let deadline = Instant::now() + VERIFY_READ_TIMEOUT;
    let mut v = Verifier::new(opts);
    read_topic(brokers, input, false, deadline, |m| {
        v.add_input(m.key().unwrap_or_default(), m.payload().unwrap_or_default())
    })
    .map_err(read_failure)?;
    v.finish_input();
    read_topic(brokers, output, true, deadline, |m| {
        v.add_output(
            m.key().unwrap_or_default(),
            m.payload().unwrap_or_default(),
            m.timestamp().to_millis(),
        )
    })
    .map_err(read_failure)?;
    if let Some(counts) = counts {
        v.expect_counts();
        read_topic(brokers, counts, true, deadline, |m| {
            v.add_count(m.key().unwrap_or_default(), m.payload().unwrap_or_default())
        })
        .map_err(read_failure)?;
    }
    if let Some(totals) = totals {
        v.expect_totals();
        read_topic(brokers, totals, true, deadline, |m| {
            v.add_total(m.key().unwrap_or_default(), m.payload().unwrap_or_default())
        })
        .map_err(read_failure)?;
    }
    let report = v.report();
    eprintln!(
        "streamshard-load: verify {input} -> {output}: {}",
        if report.ok { "ok" } else { "FAILED" }
    );
    Ok((if report.ok { 0 } else { 1 }, report.to_json()))
}
