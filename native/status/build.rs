//! Generates the gRPC types and service code from `proto/streamshard/v1/status.proto` with
//! protox (a Rust protobuf compiler), so building needs no `protoc`.
//!
//! The generated messages are also the JSON model (serde): the JSON endpoint, the client's
//! `--json` and the view Java pushes all use them, with enums as their lower-case names.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let file = root.join("streamshard/v1/status.proto");
    println!("cargo:rerun-if-changed={}", file.display());
    let fds = protox::compile([&file], [&root])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .btree_map(".")
        .message_attribute(
            ".",
            "#[derive(serde::Serialize, serde::Deserialize)] #[serde(default)]",
        )
        .field_attribute(
            ".streamshard.v1.Node.region",
            "#[serde(with = \"crate::names::region\")]",
        )
        .field_attribute(
            ".streamshard.v1.Task.mode",
            "#[serde(with = \"crate::names::mode\")]",
        )
        .field_attribute(
            ".streamshard.v1.Node.class_name",
            "#[serde(rename = \"class\")]",
        )
        .compile_fds(fds)?;
    Ok(())
}
