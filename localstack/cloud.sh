#!/usr/bin/env bash
# Start, stop and inspect the Docker-less local cloud: DynamoDB Local (Java),
# moto (Python) and the Go edge in front of both.
#
#   localstack/cloud.sh venv     install moto into .local/venv (pinned, once per machine: localstack/cache.sh)
#   localstack/cloud.sh dynamodb fetch DynamoDB Local with Maven into .local/dynamodb (pinned, once per machine)
#   localstack/cloud.sh up       start in the background (idempotent), wait until ready
#   localstack/cloud.sh down     stop (idempotent)
#   localstack/cloud.sh status   print the state and endpoints
#   localstack/cloud.sh run      run in the foreground until Ctrl-C
#
# Ports and state directory: CONCLAVE_API_PORT (4580), CONCLAVE_EDGE_PORT
# (4581), CONCLAVE_MOTO_PORT (4582), CONCLAVE_DYNAMO_PORT (4583),
# CONCLAVE_STATE_DIR (.local). Logs go to $CONCLAVE_STATE_DIR/logs/ (edge.log,
# dynamodb.log, moto.log, edge.stdout).
set -euo pipefail
cd "$(dirname "$0")/.."

STATE_DIR="${CONCLAVE_STATE_DIR:-.local}"
VENV="${CONCLAVE_VENV:-.local/venv}"
PYTHON="${PYTHON:-python3}"
DYNAMO_DIR="${CONCLAVE_DYNAMO_DIR:-.local/dynamodb}"
EDGE_BIN="$STATE_DIR/bin/edge"
MOTO_BIN="$STATE_DIR/bin/moto_server"
PID_FILE="$STATE_DIR/edge.pid"
ENV_FILE="$STATE_DIR/cloud.env"
# shellcheck source=localstack/cache.sh
. localstack/cache.sh

# venv: moto's virtualenv, pinned in localstack/requirements.txt, shared by
# every clone (localstack/cache.sh).
venv() {
  local cache="${CONCLAVE_CACHE:-}"
  [[ -z "${CONCLAVE_VENV:-}" ]] || cache=off
  CONCLAVE_CACHE="$cache" cached "$VENV" venv-moto "$(python_key localstack/requirements.txt)" install_venv
}

install_venv() {
  echo "installing moto into $1 ..."
  make_venv localstack/requirements.txt "$1"
}

# need names the prerequisites that are missing, with what to install.
need() {
  local missing=()
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  if ((${#missing[@]})); then
    echo "the local cloud needs: ${missing[*]} (not found on PATH)." >&2
    echo "  go: https://go.dev/dl/  python3: with venv and pip  java: a JDK or JRE 17+ (e.g. apt install openjdk-17-jre-headless)  mvn: Apache Maven 3.6+ (e.g. apt install maven)" >&2
    exit 1
  fi
}

# dynamodb: the DynamoDB Local pinned in localstack/dynamodb/pom.xml, with
# its native SQLite libraries, in $DYNAMO_DIR/lib, shared by every clone
# (localstack/cache.sh).
dynamodb() {
  local cache="${CONCLAVE_CACHE:-}"
  [[ -z "${CONCLAVE_DYNAMO_DIR:-}" ]] || cache=off
  CONCLAVE_CACHE="$cache" cached "$DYNAMO_DIR" dynamodb "$(sha256sum localstack/dynamodb/pom.xml | cut -c1-16)" fetch_dynamodb
}

fetch_dynamodb() {
  local dir=$1
  need mvn
  echo "fetching DynamoDB Local into $dir with Maven ..."
  rm -rf "$dir/lib"
  mkdir -p "$dir"
  local lib="$dir/lib"
  [[ "$lib" == /* ]] || lib="$PWD/$lib"
  mvn -q -B -f localstack/dynamodb/pom.xml dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$lib" >"$dir/maven.log" 2>&1 || {
    echo "Maven could not fetch DynamoDB Local (see $dir/maven.log):" >&2
    tail -n 20 "$dir/maven.log" >&2
    exit 1
  }
}

build() {
  mkdir -p "$STATE_DIR/bin"
  go build -o "$EDGE_BIN" ./localstack/edge
  # moto_server as the edge starts it: the venv's Python running
  # localstack/moto_server.py (moto, less two costs per request).
  local venv="$VENV"
  [[ "$venv" == /* ]] || venv="$PWD/$venv"
  printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$venv/bin/python" "$PWD/localstack/moto_server.py" > "$MOTO_BIN"
  chmod +x "$MOTO_BIN"
}

# install gets what the cloud runs: moto's virtualenv and DynamoDB Local at
# once (each waits mostly on the network), then the edge. The edge comes
# after them, not beside them: in make test, go vet compiles the same
# packages from the start, and two go commands building one package at the
# same time both compile it.
install() {
  local pids=() rc=0
  venv & pids+=($!)
  dynamodb & pids+=($!)
  # The ExpertGate's static embedding model (shared/routing/wordllama).
  localstack/wordllama.sh & pids+=($!)
  # The console's bundle (shared/api/consoleapi.Dir).
  localstack/console.sh & pids+=($!)
  for pid in "${pids[@]}"; do
    wait "$pid" || rc=1
  done
  [[ $rc == 0 ]] || return 1
  build
}

# edge_pid is the background edge's pid, or the foreground one's (make run
# records it in cloud.env).
edge_pid() {
  if [[ -f "$PID_FILE" ]]; then cat "$PID_FILE"; return; fi
  [[ -f "$ENV_FILE" ]] && sed -n 's/^CONCLAVE_EDGE_PID=//p' "$ENV_FILE"
}

running() {
  local pid
  pid="$(edge_pid)"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}

up() {
  if running && [[ -f "$ENV_FILE" ]]; then
    echo "local cloud already running (pid $(edge_pid))"
    return 0
  fi
  down >/dev/null
  need go "$PYTHON" java
  install
  mkdir -p "$STATE_DIR/logs"
  setsid "$EDGE_BIN" -moto-bin "$MOTO_BIN" -venv "$VENV" -dynamo-lib "$DYNAMO_DIR/lib" -state-dir "$STATE_DIR" \
    >"$STATE_DIR/logs/edge.stdout" 2>&1 < /dev/null &
  echo $! > "$PID_FILE"
  for _ in $(seq 1 240); do
    if [[ -f "$ENV_FILE" ]]; then
      echo "local cloud up (pid $(edge_pid))"
      cat "$ENV_FILE"
      return 0
    fi
    if ! running; then
      echo "local cloud failed to start:" >&2
      tail -n 30 "$STATE_DIR/logs/edge.stdout" "$STATE_DIR/logs/moto.log" "$STATE_DIR/logs/dynamodb.log" >&2 || true
      return 1
    fi
    sleep 0.25
  done
  echo "local cloud did not become ready in 60s" >&2
  return 1
}

down() {
  if running; then
    local pid
    pid="$(edge_pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  # moto and DynamoDB Local run in their own process groups; make sure no
  # orphan keeps a port.
  if [[ -f "$ENV_FILE" ]]; then
    local child
    for var in CONCLAVE_MOTO_PID CONCLAVE_DYNAMO_PID; do
      child="$(sed -n "s/^$var=//p" "$ENV_FILE")"
      [[ -n "$child" ]] && kill -TERM -- "-$child" 2>/dev/null || true
    done
  fi
  rm -f "$PID_FILE" "$ENV_FILE"
  echo "local cloud stopped"
}

# status reports each process of the cloud (alive or not, resident memory)
# and the endpoints.
status() {
  if running && [[ -f "$ENV_FILE" ]]; then
    echo "running"
    local pid rss
    for var in CONCLAVE_EDGE_PID CONCLAVE_DYNAMO_PID CONCLAVE_MOTO_PID; do
      pid="$(sed -n "s/^$var=//p" "$ENV_FILE")"
      if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        rss="$(ps -o rss= -p "$pid" | tr -d ' ')"
        printf '  %-8s pid %-7s %6s MB\n' "$(echo "$var" | sed 's/CONCLAVE_//; s/_PID//' | tr 'A-Z' 'a-z')" "$pid" "$((rss / 1024))"
      else
        printf '  %-8s NOT RUNNING (see %s/logs/)\n' "$(echo "$var" | sed 's/CONCLAVE_//; s/_PID//' | tr 'A-Z' 'a-z')" "$STATE_DIR"
      fi
    done
    cat "$ENV_FILE"
    # What the edge served, by backend: DynamoDB Local and moto by AWS
    # service, the edge's own Bedrock runtime by operation (Converse,
    # Converse.invalid: requests the real service would refuse).
    local edge_url
    edge_url="$(sed -n 's/^CONCLAVE_EDGE_URL=//p' "$ENV_FILE")"
    if [[ -n "$edge_url" ]] && command -v curl >/dev/null 2>&1; then
      echo "calls served by backend: $(curl -fsS --max-time 2 "$edge_url/_conclave/backends" 2>/dev/null || echo unavailable)"
    fi
  else
    echo "stopped"
    return 1
  fi
}

run() {
  if running; then
    echo "a local cloud is already running (pid $(edge_pid)); stop it with: make down" >&2
    exit 1
  fi
  need go "$PYTHON" java
  install
  exec "$EDGE_BIN" -moto-bin "$MOTO_BIN" -venv "$VENV" -dynamo-lib "$DYNAMO_DIR/lib" -state-dir "$STATE_DIR"
}

case "${1:-}" in
  venv) venv ;;
  dynamodb) dynamodb ;;
  up) up ;;
  down) down ;;
  status) status ;;
  run) run ;;
  *) echo "usage: $0 venv|dynamodb|up|down|status|run" >&2; exit 2 ;;
esac
