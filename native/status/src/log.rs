//! Native log events through `tracing`, to one sink.
//!
//! The JNI library installs a sink that hands each event to SLF4J (logger `io.streamshard`), so
//! native messages land where the application's logs do. Without a sink (the command-line
//! client, tests) events go to stderr as `io.streamshard LEVEL message`. Only streamshard's own
//! events at INFO and above, and other crates' (tonic, hyper, h2) at WARN and above, are passed on.

use std::fmt::Write as _;
use std::sync::OnceLock;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// Where native log events go.
pub trait LogSink: Send + Sync + 'static {
    fn log(&self, level: Level, message: &str);
}

/// Prints to stderr with the `io.streamshard` prefix.
pub struct Stderr;

impl LogSink for Stderr {
    fn log(&self, level: Level, message: &str) {
        eprintln!("io.streamshard {level} {message}");
    }
}

static INSTALLED: OnceLock<bool> = OnceLock::new();

/// Installs `sink` as the process's `tracing` subscriber, once; later calls do nothing and
/// return false (also when another subscriber was set first).
pub fn install(sink: Box<dyn LogSink>) -> bool {
    let mut first = false;
    INSTALLED.get_or_init(|| {
        let filter = Targets::new()
            .with_default(LevelFilter::WARN)
            .with_target("streamshard_status", LevelFilter::INFO)
            .with_target("streamshard_jni", LevelFilter::INFO);
        let subscriber = tracing_subscriber::registry().with(ToSink { sink }.with_filter(filter));
        first = tracing::subscriber::set_global_default(subscriber).is_ok();
        first
    });
    first
}

struct ToSink {
    sink: Box<dyn LogSink>,
}

impl<S: Subscriber> Layer<S> for ToSink {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut text = Text::default();
        event.record(&mut text);
        let meta = event.metadata();
        let message = if meta.target().starts_with("streamshard") {
            text.0
        } else {
            format!("[{}] {}", meta.target(), text.0)
        };
        self.sink.log(*meta.level(), &message);
    }
}

/// An event's message, then its other fields as `name=value`.
#[derive(Default)]
struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}
