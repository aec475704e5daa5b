//! The Kafka side of `streamshard-load`: client configuration, topic creation and metadata, and
//! reading a topic from the beginning up to the end offsets taken when the read starts.

use std::time::{Duration, Instant};

use futures::executor::block_on;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{Client, ClientContext, DefaultClientContext};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::{Offset, TopicPartitionList};

/// Timeout of one metadata or offsets request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The configuration every client starts from. Topics are never created as a side effect of a
/// metadata request (a producer's librdkafka default), only by `create_topic`.
pub fn base_config(brokers: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", brokers)
        .set("client.id", "streamshard-load")
        .set("allow.auto.create.topics", "false");
    c
}

/// How long a metadata request keeps retrying while no broker answers (a broker restart).
pub const BROKER_PATIENCE: Duration = Duration::from_secs(120);

/// Whether a metadata error means "no broker reachable now" (worth retrying), not a real answer.
fn transient(e: &KafkaError) -> bool {
    matches!(
        e,
        KafkaError::MetadataFetch(
            RDKafkaErrorCode::BrokerTransportFailure
                | RDKafkaErrorCode::AllBrokersDown
                | RDKafkaErrorCode::OperationTimedOut
                | RDKafkaErrorCode::RequestTimedOut
        )
    )
}

/// Partition ids of `topic`, or `None` if the topic does not exist. While no broker answers it
/// retries for up to [`BROKER_PATIENCE`].
pub fn topic_partitions<C: ClientContext>(
    client: &Client<C>,
    topic: &str,
) -> Result<Option<Vec<i32>>, String> {
    let deadline = Instant::now() + BROKER_PATIENCE;
    let md = loop {
        match client.fetch_metadata(Some(topic), REQUEST_TIMEOUT) {
            Ok(md) => break md,
            Err(e) if transient(&e) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => return Err(format!("metadata of {topic}: {e}")),
        }
    };
    let Some(t) = md.topics().iter().find(|t| t.name() == topic) else {
        return Ok(None);
    };
    match t.error() {
        None => {}
        Some(e) if RDKafkaErrorCode::from(e) == RDKafkaErrorCode::UnknownTopicOrPartition => {
            return Ok(None)
        }
        Some(e) => {
            return Err(format!(
                "metadata of {topic}: {}",
                RDKafkaErrorCode::from(e)
            ))
        }
    }
    if t.partitions().is_empty() {
        return Ok(None);
    }
    let mut ids: Vec<i32> = t.partitions().iter().map(|p| p.id()).collect();
    ids.sort_unstable();
    Ok(Some(ids))
}

/// Waits until `topic` exists (with at least `min_partitions` partitions) and every partition
/// has a leader; returns the partition count.
fn wait_for_leaders<C: ClientContext>(
    client: &Client<C>,
    topic: &str,
    min_partitions: usize,
    timeout: Duration,
) -> Result<usize, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match client.fetch_metadata(Some(topic), REQUEST_TIMEOUT) {
            Ok(md) => match md.topics().iter().find(|t| t.name() == topic) {
                Some(t) if t.error().is_none() && t.partitions().len() >= min_partitions => {
                    let leaderless = t
                        .partitions()
                        .iter()
                        .filter(|p| p.leader() < 0 || p.error().is_some())
                        .count();
                    if leaderless == 0 && !t.partitions().is_empty() {
                        return Ok(t.partitions().len());
                    }
                    format!("{leaderless} partition(s) without a leader")
                }
                Some(t) => format!(
                    "{} partition(s), error {:?}",
                    t.partitions().len(),
                    t.error().map(RDKafkaErrorCode::from)
                ),
                None => "topic not in metadata".to_string(),
            },
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "topic {topic} not ready after {}s: {last}",
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Creates `topic` (replication 1) with the given configs unless it exists, then waits until
/// every partition has a leader. Returns whether it was created and its partition count.
pub fn create_topic(
    brokers: &str,
    topic: &str,
    partitions: i32,
    configs: &[(String, String)],
) -> Result<(bool, usize), String> {
    let admin: AdminClient<DefaultClientContext> = base_config(brokers)
        .create()
        .map_err(|e| format!("admin client: {e}"))?;
    let mut new_topic = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    for (k, v) in configs {
        new_topic = new_topic.set(k, v);
    }
    let opts = AdminOptions::new()
        .request_timeout(Some(Duration::from_secs(30)))
        .operation_timeout(Some(Duration::from_secs(30)));
    let results = block_on(admin.create_topics([&new_topic], &opts))
        .map_err(|e| format!("create topic {topic}: {e}"))?;
    let mut created = false;
    for r in results {
        match r {
            Ok(_) => created = true,
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, code)) => return Err(format!("create topic {name}: {code}")),
        }
    }
    let min = if created { partitions as usize } else { 1 };
    let count = wait_for_leaders(admin.inner(), topic, min, Duration::from_secs(60))?;
    Ok((created, count))
}

/// Why a read stopped early.
#[derive(Debug)]
pub enum ReadError {
    /// The deadline passed before every partition reached its end offset.
    Timeout(String),
    Other(String),
}

/// Reads `topic` from the beginning of every partition up to the end offsets (high watermarks)
/// taken when the read starts, calling `f` on every record below them, partition by partition in
/// log order (partitions interleaved). Uses assign(), no group and no commits. Returns the number
/// of records read.
pub fn read_topic(
    brokers: &str,
    topic: &str,
    read_committed: bool,
    deadline: Instant,
    mut f: impl FnMut(&BorrowedMessage<'_>),
) -> Result<u64, ReadError> {
    // librdkafka refuses assign() without a group.id; this one never joins or commits.
    let group = format!(
        "streamshard-load-verify-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let consumer: BaseConsumer = base_config(brokers)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "true")
        .set("auto.offset.reset", "earliest")
        .set(
            "isolation.level",
            if read_committed {
                "read_committed"
            } else {
                "read_uncommitted"
            },
        )
        .create()
        .map_err(|e| ReadError::Other(format!("consumer: {e}")))?;
    let partitions = topic_partitions(consumer.client(), topic)
        .map_err(ReadError::Other)?
        .ok_or_else(|| ReadError::Other(format!("topic {topic} does not exist")))?;

    // Partition id -> end offset, for the partitions still to read.
    let mut ends = std::collections::BTreeMap::new();
    let mut tpl = TopicPartitionList::new();
    for &p in &partitions {
        let (low, high) = consumer
            .fetch_watermarks(topic, p, REQUEST_TIMEOUT)
            .map_err(|e| ReadError::Other(format!("end offset of {topic}/{p}: {e}")))?;
        if high > low {
            ends.insert(p, high);
            tpl.add_partition_offset(topic, p, Offset::Beginning)
                .map_err(|e| ReadError::Other(e.to_string()))?;
        }
    }
    let total_end: i64 = ends.values().sum();
    eprintln!(
        "streamshard-load: reading {topic} ({} partitions, {} non-empty, end offsets sum {total_end})",
        partitions.len(),
        ends.len()
    );
    if ends.is_empty() {
        return Ok(0);
    }
    consumer
        .assign(&tpl)
        .map_err(|e| ReadError::Other(format!("assign {topic}: {e}")))?;

    let mut read = 0u64;
    let mut check_positions = false;
    while !ends.is_empty() {
        if Instant::now() >= deadline {
            let left: Vec<String> = ends.iter().map(|(p, e)| format!("{p}(end {e})")).collect();
            return Err(ReadError::Timeout(format!(
                "timed out reading {topic}: {read} records read, partitions not at their end: {}",
                left.join(", ")
            )));
        }
        match consumer.poll(Duration::from_millis(500)) {
            Some(Ok(m)) => {
                let p = m.partition();
                if let Some(&end) = ends.get(&p) {
                    if m.offset() < end {
                        f(&m);
                        read += 1;
                    }
                    if m.offset() + 1 >= end {
                        ends.remove(&p);
                    }
                }
            }
            Some(Err(KafkaError::PartitionEOF(_))) | None => check_positions = true,
            Some(Err(e)) => eprintln!("streamshard-load: reading {topic}: {e}"),
        }
        // A partition's last offsets can be transaction markers or aborted records, which are
        // never delivered: the consumer position tells when they have been passed.
        if check_positions {
            check_positions = false;
            let pos = consumer
                .position()
                .map_err(|e| ReadError::Other(format!("position in {topic}: {e}")))?;
            for el in pos.elements_for_topic(topic) {
                if let Offset::Offset(o) = el.offset() {
                    if ends.get(&el.partition()).is_some_and(|&end| o >= end) {
                        ends.remove(&el.partition());
                    }
                }
            }
        }
    }
    Ok(read)
}
