#!/bin/sh
# Instructions per call that each guard adds to the plain call, counted
# with callgrind (load does not change them): for each path, the total of
# 12,000 calls minus that of 2,000 (start-up cancels out), over 10,000,
# minus the plain call's. See BENCHMARKS.md, "Hot path".
#
#   cargo build --release -p shed-bench --bin hot_path_count
#   shed-bench/scripts/hot_path_count.sh [binary] [paths...]
set -eu
bin=${1:-target/release/hot_path_count}
[ $# -gt 0 ] && shift
paths=${*:-uncontended wait_then_grant cancel_while_waiting}

total() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$1" "$2" "$3" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

per_call() {
    echo $((($(total "$1" "$2" 12000) - $(total "$1" "$2" 2000)) / 10000))
}

for path in $paths; do
    plain=$(per_call "$path" plain)
    semaphore=$(($(per_call "$path" semaphore) - plain))
    shed=$(($(per_call "$path" shed) - plain))
    ratio=$(awk "BEGIN { printf \"%.2f\", $shed / $semaphore }")
    echo "$path: plain $plain, semaphore +$semaphore, shed +$shed, shed/semaphore $ratio"
    if [ "$path" = uncontended ]; then
        # The same calls inside a call context (the guard's task-local
        # lookup finds one), as under the HTTP or gRPC layer.
        in_context=$(($(per_call "$path" shed_in_context) - plain))
        ratio=$(awk "BEGIN { printf \"%.2f\", $in_context / $semaphore }")
        echo "$path, in a call context: shed +$in_context, shed/semaphore $ratio"
    fi
done
