#!/usr/bin/env bash
# runners.sh N TESTBINARY ARGS...: runs upstream's e2e scripts on N local clusters at once, each
# the test binary (go test -c of this package) in a process and network namespace of its own.
# The runners share a queue (UPSTREAM_E2E_QUEUE, Claim in queue.go) and each runs the next
# script of UPSTREAM_E2E_SCRIPTS that no other has taken, so they end close together whatever
# each script takes. The scripts wait on Flink and on their own polls far more than they use the
# CPU; one cluster running them one after the other was the longest lane of make test.
# Each runner's output is printed when all have ended; the exit code is non-zero when any failed.
set -euo pipefail
runners=${1:?how many runners}
binary=${2:?the test binary}
shift 2
queue=$(mktemp -d)
logs=$(mktemp -d)
trap 'rm -rf "$queue" "$logs"' EXIT
pids=()
for i in $(seq "$runners"); do
	UPSTREAM_E2E_QUEUE=$queue "$binary" "$@" >"$logs/runner-$i.log" 2>&1 &
	pids+=("$!")
done
rc=0
for i in $(seq "$runners"); do
	if wait "${pids[$((i - 1))]}"; then outcome=passed; else outcome=FAILED; rc=1; fi
	echo "=== upstream e2e runner $i of $runners: $outcome"
	cat "$logs/runner-$i.log"
done
exit "$rc"
