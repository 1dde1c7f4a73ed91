#!/usr/bin/env bash
# Compile cost of the attribute: 500 async fns under `#[shed]`, under
# `#[tracing::instrument]`, and without any attribute (the baseline), each in
# a crate of its own, built in one workspace so that all three share their
# dependencies. Dependencies are built first; then each crate is rebuilt
# alone (after touching its source) REPS times, and the fastest build is
# reported (CPU seconds: user + system), for the dev and the release
# profile.
#
#   shed-bench/scripts/compile_cost.sh [FNS] [REPS]
#
# Prints one line per crate and profile: seconds, and seconds added over the
# plain crate.
set -euo pipefail
FNS=${1:-500}
REPS=${2:-3}
# SHED_ROOT: another checkout of shed to measure (default: this one).
ROOT=${SHED_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
WORK=$(mktemp -d /tmp/shed-compile-cost.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

cat >"$WORK/Cargo.toml" <<TOML
[workspace]
members = ["plain", "shed_fns", "tracing_fns"]
resolver = "2"
TOML

gen() { # name dependency-line attribute error-type prelude
  mkdir -p "$WORK/$1/src"
  cat >"$WORK/$1/Cargo.toml" <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
$2
TOML
  {
    echo "#![allow(clippy::all)]"
    echo "$5"
    for i in $(seq 1 "$FNS"); do
      echo "$3"
      echo "pub async fn f$i(x: u64) -> Result<u64, $4> { Ok(x.wrapping_mul($i)) }"
    done
  } >"$WORK/$1/src/lib.rs"
}
gen plain "" "" "()" ""
gen shed_fns "shed = { path = \"$ROOT\" }" "#[shed::shed]" "shed::Rejected" ""
gen tracing_fns 'tracing = "0.1"' "#[tracing::instrument]" "()" ""

cd "$WORK"
for profile in dev release; do
  flag=""; [ "$profile" = release ] && flag="--release"
  for crate in plain shed_fns tracing_fns; do
    # Untimed: builds the crate's dependencies with its own feature set.
    cargo build -q $flag -p "$crate"
    best=""
    for _ in $(seq 1 "$REPS"); do
      touch "$crate/src/lib.rs"
      # CPU seconds (user + system) of cargo and the compiler it runs: on a
      # machine shared with other builds, far steadier than wall time.
      took=$( { TIMEFORMAT='%U %S'; time cargo build -q $flag -p "$crate"; } 2>&1 | tail -1 | awk '{print $1 + $2}')
      if [ -z "$best" ] || [ "$(echo "$took < $best" | bc)" = 1 ]; then best=$took; fi
    done
    eval "best_$crate=$best"
    printf '%-8s %-12s %6.2f s CPU\n' "$profile" "$crate" "$best"
  done
  printf '%-8s added over plain: shed %.2f s, tracing %.2f s\n' "$profile" \
    "$(echo "$best_shed_fns - $best_plain" | bc)" "$(echo "$best_tracing_fns - $best_plain" | bc)"
done
