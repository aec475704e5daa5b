//! The status listener: gRPC (`streamshard.v1.Status`), `GET /api/status` (JSON) and `GET /` (the
//! page), all on one port, served by tonic and axum on a one-thread tokio runtime that exists only
//! while the listener is on.
//!
//! Read-only by construction: the routes are two GETs and two read-only RPCs; anything else gets
//! 404 or 405. A snapshot is built from Java's last pushed view and a lock-free copy of the
//! scheduler's counters, so serving never touches a record's path; the only lock it takes is the
//! scheduler's, briefly, once per sharded task to copy its partitions' progress.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use streamshard_core::{MetricsSnapshot, Scheduler, TaskId};
use tokio::sync::{oneshot, Semaphore};
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::model::{self, JavaView, Rates};
use crate::pb;
use crate::pb::status_server::StatusServer as GrpcServer;

/// The page, embedded in the library.
pub const PAGE: &str = include_str!("page/index.html");

/// Watchers served at once; more get `RESOURCE_EXHAUSTED`.
pub const MAX_WATCHERS: usize = 32;

/// Resolves `addr` (`host:port`) and refuses an address that is not loopback unless `allow_remote`.
pub fn resolve(addr: &str, allow_remote: bool) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| format!("'{addr}' is not a host:port this machine can resolve ({e})"))?
        .collect();
    let first = *addrs
        .first()
        .ok_or_else(|| format!("'{addr}' resolves to no address"))?;
    if !allow_remote {
        if let Some(a) = addrs.iter().find(|a| !a.ip().is_loopback()) {
            return Err(format!(
                "'{addr}' ({}) is not a loopback address; the status listener binds to loopback \
                 unless streamshard.status.allow.remote=true",
                a.ip()
            ));
        }
    }
    Ok(first)
}

/// What a snapshot is built from.
struct Shared {
    scheduler: Arc<Scheduler>,
    view: RwLock<Arc<JavaView>>,
    rates: Mutex<RateState>,
    watchers: Arc<Semaphore>,
}

#[derive(Default)]
struct RateState {
    last: Option<(Instant, MetricsSnapshot)>,
    rates: Rates,
}

impl Shared {
    fn snapshot(&self) -> model::Snapshot {
        let view = self.view.read().map(|v| v.clone()).unwrap_or_default();
        let metrics = self.scheduler.metrics();
        let rates = self
            .rates
            .lock()
            .map(|r| r.rates.clone())
            .unwrap_or_default();
        let s = &self.scheduler;
        model::snapshot(
            &view,
            &metrics,
            &rates,
            now_ms(),
            |subtopology, partition| {
                s.find_task(TaskId {
                    subtopology,
                    partition,
                })
                .and_then(|h| s.partitions(h).ok())
                .unwrap_or_default()
            },
        )
    }

    /// Takes a reading of the totals and turns it and the one before into per-second rates.
    fn sample(&self) {
        let now = Instant::now();
        let m = self.scheduler.metrics();
        if let Ok(mut r) = self.rates.lock() {
            if let Some((at, prev)) = &r.last {
                r.rates = Rates::between(prev, &m, now.duration_since(*at).as_secs_f64());
            }
            r.last = Some((now, m));
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A running status listener. Dropping it stops it.
pub struct StatusServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl StatusServer {
    /// Binds `addr` now (so a refused bind is this call's error) and serves it on a new runtime.
    pub fn start(
        addr: &str,
        allow_remote: bool,
        scheduler: Arc<Scheduler>,
    ) -> Result<StatusServer, String> {
        let target = resolve(addr, allow_remote)?;
        let listener =
            TcpListener::bind(target).map_err(|e| format!("cannot listen on {target}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("cannot listen on {target}: {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("cannot listen on {target}: {e}"))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(1)
            .thread_name("streamshard-status")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the status runtime: {e}"))?;
        let shared = Arc::new(Shared {
            scheduler,
            view: RwLock::new(Arc::new(JavaView::default())),
            rates: Mutex::new(RateState::default()),
            watchers: Arc::new(Semaphore::new(MAX_WATCHERS)),
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let app = router(shared.clone());
        let sampler = shared.clone();
        runtime.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                sampler.sample();
            }
        });
        let listener = {
            let _guard = runtime.enter();
            tokio::net::TcpListener::from_std(listener)
                .map_err(|e| format!("cannot listen on {target}: {e}"))?
        };
        runtime.spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!("the status listener stopped: {e}");
            }
        });
        tracing::info!(
            "status listener on http://{local}/ (gRPC streamshard.v1.Status on the same port)"
        );
        Ok(StatusServer {
            shared,
            addr: local,
            stop: Some(stop),
            runtime: Some(runtime),
        })
    }

    /// The address it listens on (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces Java's view with `json` (a [`JavaView`]).
    pub fn push(&self, json: &str) -> Result<(), String> {
        let view: JavaView =
            serde_json::from_str(json).map_err(|e| format!("bad status view from Java: {e}"))?;
        if let Ok(mut v) = self.shared.view.write() {
            *v = Arc::new(view);
        }
        Ok(())
    }

    /// A snapshot as the endpoints serve it.
    pub fn snapshot(&self) -> model::Snapshot {
        self.shared.snapshot()
    }

    /// Stops serving: open connections and watch streams are dropped within half a second.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_millis(500));
        }
    }
}

impl Drop for StatusServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn router(shared: Arc<Shared>) -> axum::Router {
    let grpc = tonic::service::Routes::new(GrpcServer::new(Service {
        shared: shared.clone(),
    }))
    .into_axum_router();
    let json = shared.clone();
    grpc.route("/", get(page))
        .route(
            "/api/status",
            get(move || {
                let s = json.clone();
                async move {
                    (
                        [(header::CACHE_CONTROL, "no-store")],
                        axum::Json(s.snapshot()),
                    )
                }
            }),
        )
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") })
}

async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                 connect-src 'self'; img-src 'self' data:",
            ),
        ],
        PAGE,
    )
}

/// The gRPC service.
struct Service {
    shared: Arc<Shared>,
}

type SnapshotStream = Pin<Box<dyn Stream<Item = Result<pb::StatusSnapshot, Status>> + Send>>;

#[tonic::async_trait]
impl pb::status_server::Status for Service {
    async fn get_status(
        &self,
        _request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::StatusSnapshot>, Status> {
        Ok(Response::new(self.shared.snapshot()))
    }

    type WatchStatusStream = SnapshotStream;

    async fn watch_status(
        &self,
        request: Request<pb::WatchStatusRequest>,
    ) -> Result<Response<SnapshotStream>, Status> {
        let permit = self
            .shared
            .watchers
            .clone()
            .try_acquire_owned()
            .map_err(|_| {
                Status::resource_exhausted(format!("at most {MAX_WATCHERS} watchers at once"))
            })?;
        let every = watch_interval(request.get_ref().interval_ms);
        let shared = self.shared.clone();
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tokio::spawn(async move {
            let _permit = permit;
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let s = shared.snapshot();
                if tx.send(Ok(s)).await.is_err() {
                    break; // the client went away
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }
}

/// A watch's interval: 0 means one second; clamped to [100 ms, 60 s].
pub fn watch_interval(ms: u32) -> Duration {
    let ms = if ms == 0 { 1000 } else { ms.clamp(100, 60_000) };
    Duration::from_millis(ms as u64)
}
