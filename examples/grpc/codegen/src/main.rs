//! Generates the gRPC example's messages, client and server from
//! `examples/grpc/proto/` into `examples/grpc/src/generated/`.
//!
//! The generated code is checked in so that building the workspace does
//! not compile a protobuf compiler; this tool keeps it honest:
//!
//! ```sh
//! cargo run --manifest-path examples/grpc/codegen/Cargo.toml            # regenerate
//! cargo run --manifest-path examples/grpc/codegen/Cargo.toml -- --check # fail if stale
//! ```
//!
//! protox (a protobuf compiler written in Rust) parses the protos, so
//! `protoc` is not needed.

use std::error::Error;
use std::fs;
use std::path::Path;
use std::process::ExitCode;

const PROTOS: [&str; 2] = ["work.proto", "orca_load_report.proto"];

fn main() -> Result<ExitCode, Box<dyn Error>> {
    let check = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--check") => true,
        Some(other) => {
            return Err(format!("unknown argument {other:?}; expected --check or nothing").into())
        }
    };
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let protos = example.join("proto");
    let committed = example.join("src/generated");

    let fresh = std::env::temp_dir().join(format!("shed-grpc-codegen-{}", std::process::id()));
    fs::create_dir_all(&fresh)?;
    let descriptors = protox::compile(PROTOS.map(|p| protos.join(p)), [&protos])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .out_dir(&fresh)
        .compile_fds(descriptors)?;

    let mut stale = Vec::new();
    for entry in fs::read_dir(&fresh)? {
        let generated = entry?.path();
        let name = generated.file_name().expect("a generated file has a name");
        let target = committed.join(name);
        let text = fs::read_to_string(&generated)?;
        if fs::read_to_string(&target).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        if check {
            stale.push(target.display().to_string());
        } else {
            fs::write(&target, text)?;
            println!("wrote {}", target.display());
        }
    }
    fs::remove_dir_all(&fresh)?;

    if stale.is_empty() {
        println!("generated code is current");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "stale generated code (run `cargo run --manifest-path examples/grpc/codegen/Cargo.toml`): {}",
            stale.join(", ")
        );
        Ok(ExitCode::FAILURE)
    }
}
