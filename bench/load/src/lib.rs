//! Pure logic of `streamshard-load`: the record format shared with the Java benchmark apps, the
//! per-key sequence state file, and the verification of an output topic against its input
//! (missing, duplicated, reordered and unexpected records, final counts, throughput, latency).
//!
//! Nothing in this module talks to Kafka; `main.rs` feeds it records, and the unit tests feed it
//! records built in memory.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};
use streamshard_workload::KeyDist;

/// The record key for key id `id`: `k<id>`.
pub fn key_name(id: u64) -> String {
    format!("k{id}")
}

/// Writes the record value `<seq>,<produced_us>,<pad>` into `buf` (cleared first); the pad is 'x'
/// repeated so the value is `payload` bytes long, or empty when the two numbers and two commas
/// already take `payload` bytes or more.
pub fn encode_value_into(buf: &mut String, seq: u64, produced_us: i64, payload: usize) {
    buf.clear();
    // Writing to a String cannot fail.
    let _ = write!(buf, "{seq},{produced_us},");
    while buf.len() < payload {
        buf.push('x');
    }
}

/// [`encode_value_into`] into a fresh string.
pub fn encode_value(seq: u64, produced_us: i64, payload: usize) -> String {
    let mut s = String::with_capacity(payload.max(24));
    encode_value_into(&mut s, seq, produced_us, payload);
    s
}

/// Parses a record value into `(seq, produced_us)`; `None` if it is not of the form
/// `<seq>,<produced_us>,<anything>`.
pub fn parse_value(value: &[u8]) -> Option<(u64, i64)> {
    let text = std::str::from_utf8(value).ok()?;
    let mut parts = text.splitn(3, ',');
    let seq = parts.next()?.parse::<u64>().ok()?;
    let produced_us = parts.next()?.parse::<i64>().ok()?;
    parts.next()?;
    Some((seq, produced_us))
}

/// Parses `--dist`: `uniform`, `zipf:S`, `hot:SHARE` or `zipfhot:S:SHARE`, over `keys` keys.
pub fn parse_dist(spec: &str, keys: u64) -> Result<KeyDist, String> {
    let (name, arg) = match spec.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (spec, None),
    };
    let number = |what: &str| -> Result<f64, String> {
        let a =
            arg.ok_or_else(|| format!("--dist {name} needs a {what}, as in {name}:<{what}>"))?;
        a.parse::<f64>()
            .map_err(|_| format!("--dist {spec}: '{a}' is not a number"))
    };
    let dist = match name {
        "uniform" if arg.is_none() => KeyDist::Uniform { keys },
        "zipf" => KeyDist::Zipf {
            keys,
            s: number("exponent")?,
        },
        "hot" => KeyDist::HotKey {
            keys,
            share: number("share")?,
        },
        "zipfhot" => {
            let (s, share) = arg
                .and_then(|a| a.split_once(':'))
                .and_then(|(s, h)| Some((s.parse::<f64>().ok()?, h.parse::<f64>().ok()?)))
                .ok_or_else(|| format!("--dist {spec}: expected zipfhot:<exponent>:<share>"))?;
            KeyDist::ZipfHot { keys, s, share }
        }
        _ => {
            return Err(format!(
                "unknown --dist '{spec}' (expected uniform, zipf:S, hot:SHARE or zipfhot:S:SHARE)"
            ))
        }
    };
    // Checks the parameters once, so a bad distribution fails before anything is produced.
    dist.sampler(0)?;
    Ok(dist)
}

/// The next sequence number of every key id, as kept in the `--state` file between produce runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeqState {
    next: BTreeMap<u64, u64>,
}

impl SeqState {
    /// The sequence number the next record of key `id` gets (0 for a key never produced).
    pub fn next_seq(&self, id: u64) -> u64 {
        self.next.get(&id).copied().unwrap_or(0)
    }

    /// Returns the sequence number for a new record of key `id` and advances it.
    pub fn take(&mut self, id: u64) -> u64 {
        let slot = self.next.entry(id).or_insert(0);
        let seq = *slot;
        *slot += 1;
        seq
    }

    /// Sets the next sequence number of key `id`.
    pub fn set(&mut self, id: u64, next: u64) {
        self.next.insert(id, next);
    }

    /// Total number of records produced so far over all keys.
    pub fn total(&self) -> u64 {
        self.next.values().sum()
    }

    /// The file form: `{"next_seq": {"<id>": <next seq>, ...}}`.
    pub fn to_json(&self) -> Value {
        let map: serde_json::Map<String, Value> = self
            .next
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(id, n)| (id.to_string(), json!(n)))
            .collect();
        json!({ "next_seq": map })
    }

    pub fn from_json(v: &Value) -> Result<SeqState, String> {
        let map = v
            .get("next_seq")
            .and_then(Value::as_object)
            .ok_or("state file has no \"next_seq\" object")?;
        let mut state = SeqState::default();
        for (id, n) in map {
            let id = id
                .parse::<u64>()
                .map_err(|_| format!("state file: key id '{id}' is not a number"))?;
            let n = n
                .as_u64()
                .ok_or_else(|| format!("state file: next seq of key {id} is not a number"))?;
            state.set(id, n);
        }
        Ok(state)
    }

    /// Reads the state file; a file that does not exist is an empty state.
    pub fn load(path: &Path) -> Result<SeqState, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let v: Value = serde_json::from_str(&text)
                    .map_err(|e| format!("state file {}: {e}", path.display()))?;
                SeqState::from_json(&v).map_err(|e| format!("{}: {e}", path.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SeqState::default()),
            Err(e) => Err(format!("cannot read state file {}: {e}", path.display())),
        }
    }

    /// Writes the state file (through a temporary file renamed over it, so a crash never leaves
    /// a half-written state).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = std::path::PathBuf::from(tmp);
        let text = serde_json::to_string(&self.to_json()).expect("a JSON value always serializes");
        std::fs::write(&tmp, text + "\n")
            .map_err(|e| format!("cannot write state file {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path)
            .map_err(|e| format!("cannot rename {} to {}: {e}", tmp.display(), path.display()))
    }
}

/// A run's throughput from its output timestamps (ms), from the first output record to the last:
/// `(n - 1) / ((ts[n-1] - ts[0]) / 1000)` records/s. Startup (JVM, group join) is before the first
/// output, so it is excluded; the end is not, because with per-key order a backlog is done only when
/// its busiest key is (a middle window would hide that). `None` under 20 records or when no time
/// elapsed.
pub fn drain_rate(timestamps_ms: &mut [i64]) -> Option<f64> {
    let n = timestamps_ms.len();
    if n < 20 {
        return None;
    }
    timestamps_ms.sort_unstable();
    let span_s = (timestamps_ms[n - 1] - timestamps_ms[0]) as f64 / 1000.0;
    (span_s > 0.0).then(|| (n - 1) as f64 / span_s)
}

/// A table's throughput: `inputs` input records over the span of its output timestamps (ms), the
/// first output record to the last. `None` under 20 output records or when no time elapsed.
pub fn table_rate(timestamps_ms: &mut [i64], inputs: u64) -> Option<f64> {
    let n = timestamps_ms.len();
    if n < 20 {
        return None;
    }
    timestamps_ms.sort_unstable();
    let span_s = (timestamps_ms[n - 1] - timestamps_ms[0]) as f64 / 1000.0;
    (span_s > 0.0).then(|| inputs.saturating_sub(1) as f64 / span_s)
}

/// The rate over the middle 80% of output timestamps (ms): `0.8 n / ((ts[floor(0.9 n)] -
/// ts[floor(0.1 n)]) / 1000)` records/s, the first and last 10% excluded. Over-reports a skewed
/// backlog (the busiest key's tail is cut off); reported beside [`drain_rate`]. Sorts in place.
pub fn mid80_rate(timestamps_ms: &mut [i64]) -> Option<f64> {
    let n = timestamps_ms.len();
    if n < 20 {
        return None;
    }
    timestamps_ms.sort_unstable();
    let span_s = (timestamps_ms[(n * 9) / 10] - timestamps_ms[n / 10]) as f64 / 1000.0;
    (span_s > 0.0).then(|| 0.8 * n as f64 / span_s)
}

/// Nearest-rank percentile (`p` in (0, 1]) of sorted values; `None` if there are none.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Options of a verification.
#[derive(Clone, Debug, Default)]
pub struct VerifyOptions {
    /// Records produced before this time (µs) count for throughput, the others for latency;
    /// `None`: all count for throughput and no latency is reported.
    pub latency_after_us: Option<i64>,
    /// Duplicates do not make the run fail (at-least-once).
    pub allow_duplicates: bool,
    /// Counts and totals may exceed the input's (at-least-once replays count twice); fewer is
    /// still a mismatch.
    pub min_counts: bool,
    /// The application's producer lost output sends (an expired batch: at-least-once Kafka
    /// Streams then replays the task from its last commit). A record that first shows up after a
    /// later record of its key, where that later record is output again afterwards, is then a
    /// lost send replayed, not an order violation: the batch holding it expired while a later
    /// batch got through, and the replay wrote it and everything after it again. Without a
    /// replay after it, it is still a violation.
    pub lost_sends: bool,
    /// The output is a table's changelog (a foreign-key join's result): a key's update may be
    /// superseded before it comes out (the join drops a response whose row changed meanwhile),
    /// so only the key's last input record must be in the output; the others that are not count
    /// as `superseded`. Order per key and everything else are checked as without it.
    pub table: bool,
}

const MAX_EXAMPLES: usize = 5;

#[derive(Default)]
struct KeyState {
    /// Input sequence numbers; sorted and deduplicated by `finish_input`.
    input_seqs: Vec<u64>,
    /// Number of input records of this key (what a count must reach).
    input_records: u64,
    /// Output copies of each input sequence number (parallel to `input_seqs`).
    output_copies: Vec<u32>,
    /// Index in `input_seqs` of the key's previous output record.
    last_output: Option<usize>,
    /// Sum of `seq + 1` over the key's input records (what a total must reach).
    input_total: u64,
    /// Last value seen in the counts topic.
    count: Option<Result<u64, String>>,
    /// Last value seen in the totals topic.
    total: Option<Result<u64, String>>,
}

/// Verifies an output topic against its input: feed it every input record, call
/// [`Verifier::finish_input`], then every output record in log order (and the counts records, if
/// any), and ask for the [`Verifier::report`].
pub struct Verifier {
    opts: VerifyOptions,
    keys: HashMap<String, KeyState>,
    input_finished: bool,
    input_records: u64,
    input_unparseable: u64,
    /// Input records produced before `latency_after_us` (all, without it): the throughput part.
    throughput_inputs: u64,
    output_records: u64,
    unexpected: u64,
    order_violations: u64,
    /// Records that first showed up after a later record of their key: (key, index of the later
    /// record, its output copies then). Decided in `report`: a violation, or a lost send replayed.
    late: Vec<(String, u64, usize, u32)>,
    counts_checked: bool,
    totals_checked: bool,
    throughput_ts: Vec<i64>,
    latencies_ms: Vec<f64>,
    examples: Vec<String>,
}

/// The verdict of a verification.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub ok: bool,
    pub input: u64,
    pub output: u64,
    pub keys: u64,
    /// Input records of the busiest key: with per-key order, `max_key_records * latency` is the
    /// least time any engine needs.
    pub max_key_records: u64,
    pub missing: u64,
    pub duplicates: u64,
    pub order_violations: u64,
    /// Records that came late and were followed by a replay of the later record of their key
    /// (a lost producer send replayed; a violation unless `lost_sends`).
    pub late_replayed: u64,
    /// Input records never output but followed by a later record of their key that was
    /// (`table` only; otherwise they are missing).
    pub superseded: u64,
    pub unexpected: u64,
    pub counts_checked: bool,
    pub count_mismatches: u64,
    pub totals_checked: bool,
    pub total_mismatches: u64,
    pub rate_rps: Option<f64>,
    pub rate_mid80_rps: Option<f64>,
    pub latency: Option<Latency>,
    pub examples: Vec<String>,
}

/// End-to-end latency of the records produced after `--latency-after-us` (ms).
#[derive(Clone, Debug, PartialEq)]
pub struct Latency {
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    pub n: u64,
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn short(bytes: &[u8]) -> String {
    let s = lossy(bytes);
    if s.chars().count() > 40 {
        let head: String = s.chars().take(40).collect();
        format!("{head}...")
    } else {
        s
    }
}

impl Verifier {
    pub fn new(opts: VerifyOptions) -> Self {
        Verifier {
            opts,
            keys: HashMap::new(),
            input_finished: false,
            input_records: 0,
            input_unparseable: 0,
            throughput_inputs: 0,
            output_records: 0,
            unexpected: 0,
            order_violations: 0,
            late: Vec::new(),
            counts_checked: false,
            totals_checked: false,
            throughput_ts: Vec::new(),
            latencies_ms: Vec::new(),
            examples: Vec::new(),
        }
    }

    fn example(&mut self, text: impl FnOnce() -> String) {
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(text());
        }
    }

    /// One record of the input topic.
    pub fn add_input(&mut self, key: &[u8], value: &[u8]) {
        assert!(!self.input_finished, "input record after finish_input");
        self.input_records += 1;
        let Some((seq, produced_us)) = parse_value(value) else {
            self.input_unparseable += 1;
            self.example(|| format!("unparseable input value for key {}", short(key)));
            return;
        };
        if self.opts.latency_after_us.is_none_or(|t| produced_us < t) {
            self.throughput_inputs += 1;
        }
        let k = match std::str::from_utf8(key) {
            Ok(k) => self.keys.entry(k.to_owned()).or_default(),
            Err(_) => self.keys.entry(lossy(key)).or_default(),
        };
        k.input_seqs.push(seq);
        k.input_records += 1;
        k.input_total = k.input_total.saturating_add(seq.saturating_add(1));
    }

    /// Ends the input; output and counts records may follow.
    pub fn finish_input(&mut self) {
        for k in self.keys.values_mut() {
            k.input_seqs.sort_unstable();
            k.input_seqs.dedup();
            k.input_seqs.shrink_to_fit();
            k.output_copies = vec![0; k.input_seqs.len()];
        }
        self.input_finished = true;
    }

    /// One record of the output topic, in log order; `timestamp_ms` is its (log append) time.
    pub fn add_output(&mut self, key: &[u8], value: &[u8], timestamp_ms: Option<i64>) {
        assert!(self.input_finished, "output record before finish_input");
        self.output_records += 1;
        let Some((seq, produced_us)) = parse_value(value) else {
            self.unexpected += 1;
            self.example(|| format!("unparseable output value {:?}", short(value)));
            return;
        };
        if let Some(ts) = timestamp_ms {
            match self.opts.latency_after_us {
                Some(t) if produced_us >= t => self
                    .latencies_ms
                    .push(ts as f64 - produced_us as f64 / 1000.0),
                _ => self.throughput_ts.push(ts),
            }
        }
        let found = std::str::from_utf8(key).ok().and_then(|k| {
            let state = self.keys.get_mut(k)?;
            let i = state.input_seqs.binary_search(&seq).ok()?;
            Some((state, i))
        });
        let Some((state, i)) = found else {
            self.unexpected += 1;
            self.example(|| format!("unexpected output {}:{seq} (not in input)", short(key)));
            return;
        };
        state.output_copies[i] = state.output_copies[i].saturating_add(1);
        let first_copy = state.output_copies[i] == 1;
        let previous = state.last_output;
        // A late record (never output, before the previous one) is counted once and leaves the
        // position where it was; a replay (an output record again) restarts it.
        state.last_output = Some(match previous {
            Some(prev) if i <= prev && first_copy => prev,
            _ => i,
        });
        // Per key, the output is the input in order, possibly restarted by replays (at-least-once
        // after a crash or a rebalance): each record is the key's next input record after the
        // previous output, or an already output one at or before it (a replay starts there).
        // An order violation is a record before the previous one that was never output, or a jump
        // over records of which one was already output (a replay out of order). A jump over
        // records never output is not one by itself: they are missing, or violations when they
        // come.
        // A late record is decided in `report`: whether the record it came after is output
        // again later (a replay) is not known yet.
        if let Some(prev) = previous {
            let prev_seq = state.input_seqs[prev];
            if i <= prev && first_copy {
                let prev_copies = state.output_copies[prev];
                self.late.push((lossy(key), seq, prev, prev_copies));
            } else if i > prev && state.output_copies[prev + 1..i].iter().any(|&c| c > 0) {
                self.order_violations += 1;
                self.example(|| {
                    format!(
                        "order violation on {}: seq {seq} after {prev_seq}",
                        short(key)
                    )
                });
            }
        }
    }

    /// Sorts the late records into order violations and lost sends replayed (see
    /// [`VerifyOptions::lost_sends`]); returns how many were replayed.
    fn decide_late(&mut self) -> u64 {
        let mut replayed = 0;
        for (key, seq, prev, prev_copies) in std::mem::take(&mut self.late) {
            let state = &self.keys[&key];
            let prev_seq = state.input_seqs[prev];
            if state.output_copies[prev] > prev_copies {
                replayed += 1;
                if self.opts.lost_sends {
                    continue;
                }
            }
            self.order_violations += 1;
            self.example(|| {
                format!(
                    "order violation on {}: seq {seq} after {prev_seq}",
                    short(key.as_bytes())
                )
            });
        }
        replayed
    }

    /// One record of the counts topic, in log order (the last one per key is the final count).
    pub fn add_count(&mut self, key: &[u8], value: &[u8]) {
        self.counts_checked = true;
        self.keys.entry(lossy(key)).or_default().count = Some(parse_number(value));
    }

    /// Marks the counts as checked even if the counts topic turned out empty.
    pub fn expect_counts(&mut self) {
        self.counts_checked = true;
    }

    /// One record of the totals topic, in log order: the last one per key must be the sum of
    /// `seq + 1` over the key's input records.
    pub fn add_total(&mut self, key: &[u8], value: &[u8]) {
        self.totals_checked = true;
        self.keys.entry(lossy(key)).or_default().total = Some(parse_number(value));
    }

    /// Marks the totals as checked even if the totals topic turned out empty.
    pub fn expect_totals(&mut self) {
        self.totals_checked = true;
    }

    /// Whether a final count or total is right: equal to `expected` (or at least it, with
    /// `min_counts`); a key without input must have none or 0.
    fn agrees(&self, got: &Option<Result<u64, String>>, expected: u64) -> bool {
        match got {
            Some(Ok(c)) if self.opts.min_counts => *c >= expected,
            Some(Ok(c)) => *c == expected,
            None => expected == 0,
            Some(Err(_)) => false,
        }
    }

    pub fn report(&mut self) -> Report {
        let late_replayed = self.decide_late();
        let mut missing = 0u64;
        let mut superseded = 0u64;
        let mut duplicates = 0u64;
        let mut count_mismatches = 0u64;
        let mut total_mismatches = 0u64;
        let mut new_examples = Vec::new();
        let mut names: Vec<&String> = self.keys.keys().collect();
        names.sort();
        for name in names {
            let k = &self.keys[name];
            let last = k.input_seqs.len().saturating_sub(1);
            for (i, (seq, &copies)) in k.input_seqs.iter().zip(&k.output_copies).enumerate() {
                if copies == 0 && self.opts.table && i < last {
                    superseded += 1;
                } else if copies == 0 {
                    missing += 1;
                    new_examples.push(format!("missing {name}:{seq}"));
                } else if copies > 1 {
                    duplicates += u64::from(copies - 1);
                    new_examples.push(format!("{name}:{seq} output {copies} times"));
                }
            }
            if self.counts_checked && !self.agrees(&k.count, k.input_records) {
                count_mismatches += 1;
                new_examples.push(mismatch("count", name, &k.count, k.input_records));
            }
            if self.totals_checked && !self.agrees(&k.total, k.input_total) {
                total_mismatches += 1;
                new_examples.push(mismatch("total", name, &k.total, k.input_total));
            }
        }
        for e in new_examples {
            self.example(|| e);
        }
        let (rate_rps, rate_mid80_rps) = if self.opts.table {
            // A table's output holds fewer records than its input (superseded updates), so its
            // rate is the input's: every input record was processed by the last output record.
            (
                table_rate(&mut self.throughput_ts, self.throughput_inputs),
                None,
            )
        } else {
            (
                drain_rate(&mut self.throughput_ts),
                mid80_rate(&mut self.throughput_ts),
            )
        };
        let latency = self.opts.latency_after_us.map(|_| {
            self.latencies_ms.sort_unstable_by(f64::total_cmp);
            Latency {
                p50: percentile(&self.latencies_ms, 0.5),
                p99: percentile(&self.latencies_ms, 0.99),
                max: self.latencies_ms.last().copied(),
                n: self.latencies_ms.len() as u64,
            }
        });
        let unexpected = self.unexpected + self.input_unparseable;
        let ok = missing == 0
            && self.order_violations == 0
            && unexpected == 0
            && count_mismatches == 0
            && total_mismatches == 0
            && (duplicates == 0 || self.opts.allow_duplicates);
        Report {
            ok,
            input: self.input_records,
            output: self.output_records,
            keys: self.keys.values().filter(|k| k.input_records > 0).count() as u64,
            max_key_records: self
                .keys
                .values()
                .map(|k| k.input_records)
                .max()
                .unwrap_or(0),
            missing,
            duplicates,
            order_violations: self.order_violations,
            late_replayed,
            superseded,
            unexpected,
            counts_checked: self.counts_checked,
            count_mismatches,
            totals_checked: self.totals_checked,
            total_mismatches,
            rate_rps,
            rate_mid80_rps,
            latency,
            examples: self.examples.clone(),
        }
    }
}

fn parse_number(value: &[u8]) -> Result<u64, String> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .ok_or_else(|| short(value))
}

fn mismatch(what: &str, key: &str, got: &Option<Result<u64, String>>, expected: u64) -> String {
    match got {
        Some(Ok(c)) => format!("{what} of {key} is {c}, expected {expected}"),
        Some(Err(v)) => format!("{what} of {key} is unparseable {v:?}"),
        None => format!("no {what} for {key}, expected {expected}"),
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl Report {
    pub fn to_json(&self) -> Value {
        json!({
            "ok": self.ok,
            "input": self.input,
            "output": self.output,
            "keys": self.keys,
            "max_key_records": self.max_key_records,
            "missing": self.missing,
            "duplicates": self.duplicates,
            "order_violations": self.order_violations,
            "late_replayed": self.late_replayed,
            "superseded": self.superseded,
            "unexpected": self.unexpected,
            "counts_checked": self.counts_checked,
            "count_mismatches": self.count_mismatches,
            "totals_checked": self.totals_checked,
            "total_mismatches": self.total_mismatches,
            "rate_rps": self.rate_rps.map(round3),
            "rate_mid80_rps": self.rate_mid80_rps.map(round3),
            "latency_ms": self.latency.as_ref().map(|l| json!({
                "p50": l.p50.map(round3),
                "p99": l.p99.map(round3),
                "max": l.max.map(round3),
                "n": l.n,
            })),
            "examples": self.examples,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Input: keys k0..k2 with seqs 0..4 each, produced at 1_000_000 + 1000 * i µs.
    fn input() -> Vec<(String, String)> {
        let mut v = Vec::new();
        for seq in 0..5u64 {
            for id in 0..3u64 {
                let produced = 1_000_000 + 1000 * (seq * 3 + id) as i64;
                v.push((key_name(id), encode_value(seq, produced, 32)));
            }
        }
        v
    }

    fn run(
        opts: VerifyOptions,
        output: &[(String, String)],
        counts: Option<&[(&str, &str)]>,
    ) -> Report {
        let mut v = Verifier::new(opts);
        for (k, val) in input() {
            v.add_input(k.as_bytes(), val.as_bytes());
        }
        v.finish_input();
        for (i, (k, val)) in output.iter().enumerate() {
            v.add_output(k.as_bytes(), val.as_bytes(), Some(2_000 + i as i64));
        }
        if let Some(counts) = counts {
            v.expect_counts();
            for (k, c) in counts {
                v.add_count(k.as_bytes(), c.as_bytes());
            }
        }
        v.report()
    }

    fn good_counts() -> Vec<(&'static str, &'static str)> {
        vec![("k0", "3"), ("k1", "5"), ("k0", "5"), ("k2", "5")]
    }

    #[test]
    fn clean_run_passes() {
        let out = input();
        let r = run(VerifyOptions::default(), &out, Some(&good_counts()));
        assert!(r.ok, "{r:?}");
        assert_eq!((r.input, r.output, r.keys), (15, 15, 3));
        assert_eq!(r.max_key_records, 5);
        assert_eq!(
            r.missing + r.duplicates + r.order_violations + r.unexpected,
            0
        );
        assert!(r.counts_checked);
        assert_eq!(r.count_mismatches, 0);
        assert!(r.examples.is_empty());
        assert_eq!(r.rate_rps, None, "under 20 records");
        assert_eq!(r.latency, None);
        assert_eq!(r.to_json()["ok"], json!(true));
    }

    #[test]
    fn a_tables_rate_counts_its_input_over_the_output_span() {
        let mut ts: Vec<i64> = (0..20).map(|i| 1_000 + 100 * i).collect();
        // 100 input records, 20 output records over 1.9 s
        let r = table_rate(&mut ts, 100).unwrap();
        assert!((r - 99.0 / 1.9).abs() < 1e-9, "{r}");
        assert_eq!(table_rate(&mut ts[..10], 100), None);
    }

    #[test]
    fn a_table_may_skip_superseded_updates_but_not_a_keys_last() {
        let table = VerifyOptions {
            table: true,
            ..VerifyOptions::default()
        };
        // k1's records are at 1, 4, 7, 10, 13 (seq 0..4): drop seq 1 and 2 (superseded).
        let mut out = input();
        out.remove(7);
        out.remove(4);
        let r = run(table.clone(), &out, None);
        assert!(r.ok, "{r:?}");
        assert_eq!((r.missing, r.superseded), (0, 2));
        assert_eq!(r.rate_mid80_rps, None, "a table's rate is its input's");
        assert_eq!(r.to_json()["superseded"], json!(2));
        // Without the key's last record it is missing.
        let mut out = input();
        let last = out.iter().rposition(|(k, _)| k == "k1").unwrap();
        out.remove(last);
        let r = run(table.clone(), &out, None);
        assert!(!r.ok);
        assert_eq!((r.missing, r.superseded), (1, 0));
        // Out of order is still a violation.
        let mut out = input();
        out.swap(1, 4);
        let r = run(table, &out, None);
        assert!(!r.ok);
        assert!(r.order_violations > 0, "{r:?}");
    }

    #[test]
    fn missing_record_is_detected() {
        let mut out = input();
        out.remove(7);
        let r = run(VerifyOptions::default(), &out, None);
        assert!(!r.ok);
        assert_eq!(r.missing, 1);
        assert_eq!(r.order_violations, 0);
        assert_eq!(r.examples, vec!["missing k1:2".to_string()]);
    }

    #[test]
    fn duplicate_is_detected_and_can_be_allowed() {
        let mut out = input();
        let again = out[4].clone();
        out.insert(6, again);
        let r = run(VerifyOptions::default(), &out, None);
        assert!(!r.ok);
        assert_eq!(r.duplicates, 1);
        assert_eq!(
            r.order_violations, 0,
            "a duplicate is not an order violation"
        );
        let r = run(
            VerifyOptions {
                allow_duplicates: true,
                ..Default::default()
            },
            &out,
            None,
        );
        assert!(r.ok, "{r:?}");
        assert_eq!(r.duplicates, 1);
    }

    #[test]
    fn replayed_suffix_is_duplicates_not_reordering() {
        // At-least-once after a crash: k0's 2, 3 and 4 appear again after 4.
        let mut out = input();
        out.extend(
            input().into_iter().filter(|(k, v)| {
                k == "k0" && parse_value(v.as_bytes()).map(|(s, _)| s >= 2).unwrap()
            }),
        );
        let r = run(
            VerifyOptions {
                allow_duplicates: true,
                ..Default::default()
            },
            &out,
            None,
        );
        assert!(r.ok, "{r:?}");
        assert_eq!((r.duplicates, r.order_violations), (3, 0));
    }

    #[test]
    fn a_replay_out_of_order_is_an_order_violation() {
        // k0 output 0..4, then a replay of 2, 4, 3: the jump from 2 to 4 skips 3, output before.
        let mut out = input();
        for seq in [2u64, 4, 3] {
            out.push((
                "k0".into(),
                encode_value(seq, 1_000_000 + 1000 * (seq * 3) as i64, 32),
            ));
        }
        let opts = VerifyOptions {
            allow_duplicates: true,
            ..Default::default()
        };
        let r = run(opts.clone(), &out, None);
        assert!(!r.ok, "{r:?}");
        assert_eq!((r.duplicates, r.order_violations), (3, 1));
        assert_eq!(r.examples[0], "order violation on k0: seq 4 after 2");
        // The same replay in order is fine, and so is a replay that starts again further back.
        let mut out = input();
        for seq in [2u64, 3, 4, 1, 2, 3, 4] {
            out.push((
                "k0".into(),
                encode_value(seq, 1_000_000 + 1000 * (seq * 3) as i64, 32),
            ));
        }
        let r = run(opts, &out, None);
        assert!(r.ok, "{r:?}");
        assert_eq!((r.duplicates, r.order_violations), (7, 0));
    }

    #[test]
    fn a_lost_send_replayed_is_excused_only_with_lost_sends() {
        // k0's 2 was in a producer batch that expired while the batch with its 3 got through;
        // the task replayed from its last commit (just before 2): 2, 3, 4 again.
        let mut out: Vec<_> = input()
            .into_iter()
            .filter(|(k, v)| k != "k0" || parse_value(v.as_bytes()).unwrap().0 != 2)
            .collect();
        for seq in [2u64, 3, 4] {
            out.push((
                "k0".into(),
                encode_value(seq, 1_000_000 + 1000 * (seq * 3) as i64, 32),
            ));
        }
        let mut opts = VerifyOptions {
            allow_duplicates: true,
            ..Default::default()
        };
        let r = run(opts.clone(), &out, None);
        assert!(!r.ok, "{r:?}");
        assert_eq!(
            (r.order_violations, r.late_replayed, r.duplicates),
            (1, 1, 2)
        );
        assert_eq!(r.examples[0], "order violation on k0: seq 2 after 4");
        opts.lost_sends = true;
        let r = run(opts.clone(), &out, None);
        assert!(r.ok, "{r:?}");
        assert_eq!((r.order_violations, r.late_replayed, r.missing), (0, 1, 0));
        // Late without a replay of the record it came after: a violation even with lost sends.
        let mut swapped = input();
        swapped.swap(5, 8);
        let r = run(opts, &swapped, None);
        assert!(!r.ok, "{r:?}");
        assert_eq!((r.order_violations, r.late_replayed), (1, 0));
    }

    #[test]
    fn order_violation_is_detected() {
        // Swap k2:1 (index 5) and k2:2 (index 8).
        let mut out = input();
        out.swap(5, 8);
        let r = run(VerifyOptions::default(), &out, None);
        assert!(!r.ok);
        assert_eq!(r.order_violations, 1);
        assert_eq!((r.missing, r.duplicates), (0, 0));
        assert_eq!(r.examples, vec!["order violation on k2: seq 1 after 2"]);
    }

    #[test]
    fn unexpected_values_are_detected() {
        let mut out = input();
        out.push(("k1".into(), encode_value(99, 5, 0)));
        out.push(("k7".into(), encode_value(0, 5, 0)));
        out.push(("k0".into(), "garbage".into()));
        let r = run(VerifyOptions::default(), &out, None);
        assert!(!r.ok);
        assert_eq!(r.unexpected, 3);
        assert_eq!(r.output, 18);
        assert_eq!(r.missing, 0);
    }

    #[test]
    fn wrong_or_missing_count_is_detected() {
        let out = input();
        let r = run(
            VerifyOptions::default(),
            &out,
            Some(&[("k0", "5"), ("k1", "4"), ("k9", "1")]),
        );
        assert!(!r.ok);
        // k1 is wrong, k2 has no count, k9 is not in the input at all.
        assert_eq!(r.count_mismatches, 3);
        assert_eq!(
            r.missing + r.duplicates + r.order_violations + r.unexpected,
            0
        );
        let r = run(
            VerifyOptions::default(),
            &out,
            Some(&[("k0", "5"), ("k1", "5"), ("k2", "five")]),
        );
        assert_eq!(r.count_mismatches, 1);
    }

    /// Totals are the sum of `seq + 1` per key (k0..k2: seqs 0..4, so 15 each).
    fn with_totals(
        opts: VerifyOptions,
        counts: &[(&str, &str)],
        totals: &[(&str, &str)],
    ) -> Report {
        let mut v = Verifier::new(opts);
        for (k, val) in input() {
            v.add_input(k.as_bytes(), val.as_bytes());
        }
        v.finish_input();
        for (k, val) in input() {
            v.add_output(k.as_bytes(), val.as_bytes(), None);
        }
        v.expect_counts();
        for (k, c) in counts {
            v.add_count(k.as_bytes(), c.as_bytes());
        }
        v.expect_totals();
        for (k, t) in totals {
            v.add_total(k.as_bytes(), t.as_bytes());
        }
        v.report()
    }

    #[test]
    fn totals_are_checked_exactly_unless_min_counts() {
        let counts = [("k0", "5"), ("k1", "5"), ("k2", "5")];
        let r = with_totals(
            VerifyOptions::default(),
            &counts,
            &[("k0", "15"), ("k1", "1"), ("k1", "15"), ("k2", "15")],
        );
        assert!(r.ok, "{r:?}");
        assert!(r.totals_checked);
        assert_eq!(r.total_mismatches, 0);
        // Too high (a replay counted twice), too low, absent.
        let r = with_totals(
            VerifyOptions::default(),
            &counts,
            &[("k0", "16"), ("k1", "14")],
        );
        assert!(!r.ok);
        assert_eq!(r.total_mismatches, 3);
        assert_eq!(r.count_mismatches, 0);
        // At-least-once: more is fine, fewer or none still fails, for counts and totals alike.
        let alo = VerifyOptions {
            min_counts: true,
            ..Default::default()
        };
        let r = with_totals(
            alo.clone(),
            &[("k0", "6"), ("k1", "5"), ("k2", "9")],
            &[("k0", "16"), ("k1", "15"), ("k2", "20")],
        );
        assert!(r.ok, "{r:?}");
        let r = with_totals(
            alo,
            &[("k0", "4"), ("k1", "5")],
            &[("k0", "16"), ("k1", "14"), ("k2", "15")],
        );
        assert!(!r.ok);
        assert_eq!(r.count_mismatches, 2);
        assert_eq!(r.total_mismatches, 1);
    }

    #[test]
    fn rates_on_known_timestamps() {
        // 100 records, one per 10 ms: 99 intervals in 0.99 s; middle: ts[10] = 100, ts[90] = 900.
        let mut ts: Vec<i64> = (0..100).rev().map(|i| i * 10).collect();
        assert!((drain_rate(&mut ts.clone()).unwrap() - 100.0).abs() < 1e-9);
        assert!((mid80_rate(&mut ts).unwrap() - 100.0).abs() < 1e-9);
        // 20 records, 18 within 17 ms and a tail of two at 1 s (a hot key finishing last): the
        // drain rate sees the tail (19 in 1.003 s), the middle window does not (ts[2] = 2, ts[18]
        // = 1002: 16 records in 1 s).
        let mut ts = vec![
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 1002, 1003,
        ];
        assert!((drain_rate(&mut ts.clone()).unwrap() - 19.0 / 1.003).abs() < 1e-9);
        assert_eq!(mid80_rate(&mut ts), Some(16.0));
        assert_eq!(drain_rate(&mut [5; 19]), None, "too few records");
        assert_eq!(drain_rate(&mut [5; 40]), None, "no time elapsed");
        assert_eq!(mid80_rate(&mut [5; 40]), None, "no time elapsed");
    }

    #[test]
    fn throughput_and_latency_split_on_produced_time() {
        let mut v = Verifier::new(VerifyOptions {
            latency_after_us: Some(1_000_000),
            ..Default::default()
        });
        for seq in 0..130u64 {
            v.add_input(b"k0", encode_value(seq, 0, 0).as_bytes());
        }
        v.finish_input();
        // 30 early records, one per ms, then 100 late ones with latency 1..=100 ms.
        for seq in 0..30u64 {
            v.add_output(b"k0", encode_value(seq, 0, 0).as_bytes(), Some(seq as i64));
        }
        for i in 0..100i64 {
            let produced_us = 2_000_000 + i * 1000;
            let ts = produced_us / 1000 + i + 1;
            let value = encode_value(30 + i as u64, produced_us, 0);
            v.add_output(b"k0", value.as_bytes(), Some(ts));
        }
        let r = v.report();
        // ts 0..=29: 29 intervals in 29 ms.
        assert!(
            (r.rate_rps.unwrap() - 1000.0).abs() < 1e-6,
            "{:?}",
            r.rate_rps
        );
        let l = r.latency.unwrap();
        assert_eq!(l.n, 100);
        assert_eq!(l.p50, Some(50.0));
        assert_eq!(l.p99, Some(99.0));
        assert_eq!(l.max, Some(100.0));
        assert!(r.ok);
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), Some(5.0));
        assert_eq!(percentile(&v, 0.99), Some(10.0));
        assert_eq!(percentile(&v, 0.1), Some(1.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn encode_parse_round_trip_and_padding() {
        let v = encode_value(17, 1_700_000_000_123_456, 100);
        assert_eq!(v.len(), 100);
        assert!(v.starts_with("17,1700000000123456,x"));
        assert!(v.ends_with('x'));
        assert_eq!(parse_value(v.as_bytes()), Some((17, 1_700_000_000_123_456)));
        // Too small a payload: no padding, the two numbers and two commas only.
        let v = encode_value(3, 42, 4);
        assert_eq!(v, "3,42,");
        assert_eq!(parse_value(v.as_bytes()), Some((3, 42)));
        assert_eq!(encode_value(3, 42, 6), "3,42,x");
        assert_eq!(parse_value(b"3,42"), None);
        assert_eq!(parse_value(b"a,42,"), None);
        assert_eq!(parse_value(b"\xff,1,"), None);
        assert_eq!(key_name(42), "k42");
    }

    #[test]
    fn dist_specs() {
        assert_eq!(parse_dist("uniform", 5), Ok(KeyDist::Uniform { keys: 5 }));
        assert_eq!(
            parse_dist("zipf:1.1", 100),
            Ok(KeyDist::Zipf { keys: 100, s: 1.1 })
        );
        assert_eq!(
            parse_dist("hot:0.5", 10),
            Ok(KeyDist::HotKey {
                keys: 10,
                share: 0.5
            })
        );
        assert_eq!(
            parse_dist("zipfhot:1.1:0.05", 10),
            Ok(KeyDist::ZipfHot {
                keys: 10,
                s: 1.1,
                share: 0.05
            })
        );
        assert!(parse_dist("zipfhot:1.1", 10).is_err());
        assert!(parse_dist("zipfhot:x:0.1", 10).is_err());
        assert!(parse_dist("zipf", 10).is_err());
        assert!(parse_dist("hot:2", 10).is_err());
        assert!(parse_dist("normal", 10).is_err());
        assert!(parse_dist("uniform", 0).is_err());
    }

    #[test]
    fn state_round_trip() {
        let mut s = SeqState::default();
        assert_eq!(s.take(3), 0);
        assert_eq!(s.take(3), 1);
        assert_eq!(s.take(0), 0);
        assert_eq!(s.total(), 3);
        let back = SeqState::from_json(&s.to_json()).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.next_seq(3), 2);
        assert_eq!(back.next_seq(1), 0);

        let dir = std::env::temp_dir().join(format!("streamshard-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.json");
        assert_eq!(SeqState::load(&path), Ok(SeqState::default()));
        s.save(&path).unwrap();
        assert_eq!(SeqState::load(&path), Ok(s));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
