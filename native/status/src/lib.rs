//! streamshard's status service and its client.
//!
//! - [`server::StatusServer`]: the read-only listener (gRPC `streamshard.v1.Status`, `GET
//!   /api/status`, `GET /`), started by the JNI library only when `streamshard.status.listener`
//!   is set.
//! - [`model`]: what Java pushes, and the snapshot served (the generated messages, serde too).
//! - [`log`]: native log events (`tracing`) to SLF4J through a sink the JNI library installs,
//!   or to stderr with the `io.streamshard` prefix.
//! - [`table`]: the command-line client's table.

pub mod log;
pub mod model;
pub mod names;
pub mod server;
pub mod table;

/// The generated gRPC types (from `proto/streamshard/v1/status.proto`).
#[allow(clippy::all)]
pub mod pb {
    tonic::include_proto!("streamshard.v1");
}
