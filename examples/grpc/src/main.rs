//! The example gRPC server: `cargo run -p shed-grpc-example -- 127.0.0.1:50051`
//! (add `--orca` for the ORCA load-report trailer). Its capacity comes
//! from shed's configuration (`SHED_*` environment variables, or the
//! adaptive default).

use shed_grpc_example::server::{self, Options};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:50051".to_owned());
    let orca = args.any(|a| a == "--orca");
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let limiter = shed::Limiter::current();
    let server = server::serve(listener, Options::new(limiter).orca(orca)).await?;
    println!(
        "shed gRPC example on {} (ORCA trailer: {orca})",
        server.addr
    );
    std::future::pending::<()>().await;
    Ok(())
}
