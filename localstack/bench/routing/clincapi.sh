#!/usr/bin/env bash
# CLINC150 through the HTTP API (issue 42): the team of
# localstack/bench/clincbench (25 examples per skill) created on a running
# stage, a sample of the test splits routed as new conversations' first
# turns, the figures written into the "routing-clinc150-api" section of
# docs/measurements.md (unless BENCH_DOC=off).
#
#   make bench-routing-api          # a fresh local cloud of its own, then down
#   set -a; . .local/cloud.env; set +a; localstack/bench/routing/clincapi.sh
#
# Needs CONCLAVE_BASE_URL, CONCLAVE_EDGE_URL and CONCLAVE_STAGE (a local
# cloud's cloud.env). CLINC_API_ARGS: more flags for clincbench -api
# (-stride, -workers, -rate, -fit-wait, -v); a run with them writes nothing.
set -euo pipefail
cd "$(dirname "$0")/../../.."

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
start=$SECONDS
# shellcheck disable=SC2086
go run ./localstack/bench/clincbench -api ${CLINC_API_ARGS:-} | tee "$out"
echo "bench-routing-api: $((SECONDS - start)) s"
if [[ "${BENCH_DOC:-docs/measurements.md}" != off && -z "${CLINC_API_ARGS:-}" ]]; then
  {
    echo "Written by \`make bench-routing-api\` on commit \`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`, $(date -u +%Y-%m-%d), in $((SECONDS - start)) s; $(uname -m), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg):"
    echo
    cat "$out"
  } | go run ./localstack/benchdoc -doc "${BENCH_DOC:-docs/measurements.md}" -section routing-clinc150-api
fi
