//! Generates the gRPC service and messages from `proto/`, with protox (a
//! protobuf compiler written in Rust) instead of `protoc`, so that every
//! tool the build needs comes from Cargo.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = ["proto/work.proto", "proto/orca_load_report.proto"];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
