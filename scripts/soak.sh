#!/usr/bin/env bash
# Soak test: the example server at 2x its capacity, then checks that its
# memory stayed flat, its descriptors did not grow, and it settles at once.
#
#   scripts/soak.sh          3 minutes at 2x (1,600 rps on 800), release build, 30 s warm-up
#   scripts/soak.sh --ci     30 s at 2x of a slower database (400 rps on 200), debug build, 10 s warm-up
#
# QUERY_MS, RPS, SOAK_SECONDS and WARMUP override the figures (keep RPS at
# 2 x 16000 / QUERY_MS for "2x"). Needs only cargo: the load generator is
# the project's own (examples/soak.rs).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--ci" ]]; then
    profile=debug; flags=(); query_ms=80; rps=400; seconds=30; warmup=10
else
    profile=release; flags=(--release); query_ms=20; rps=1600; seconds=180; warmup=30
fi
query_ms=${QUERY_MS:-$query_ms}; rps=${RPS:-$rps}; seconds=${SOAK_SECONDS:-$seconds}; warmup=${WARMUP:-$warmup}
port=${PORT:-3300}
admin_port=${ADMIN_PORT:-9300}

cargo build "${flags[@]}" --features axum --example axum_server --example soak
PORT=$port ADMIN_PORT=$admin_port QUERY_MS=$query_ms "target/$profile/examples/axum_server" >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    sleep 0.1
done
echo "soak: server pid $server on :$port, $rps rps for $seconds s (capacity $((16000 / query_ms)) rps)"
"target/$profile/examples/soak" "$server" "$port" "$admin_port" "$rps" "$seconds" "$warmup"
