#!/usr/bin/env bash
# Start, stop and inspect the Docker-less local cloud (moto + the Go edge).
#
#   localstack/cloud.sh venv     install moto into .local/venv (pinned, once)
#   localstack/cloud.sh up       start in the background (idempotent), wait until ready
#   localstack/cloud.sh down     stop (idempotent)
#   localstack/cloud.sh status   print the state and endpoints
#   localstack/cloud.sh run      run in the foreground until Ctrl-C
#
# Ports and state directory: CONCLAVE_API_PORT (4580), CONCLAVE_EDGE_PORT
# (4581), CONCLAVE_MOTO_PORT (4582), CONCLAVE_STATE_DIR (.local). Logs go to
# $CONCLAVE_STATE_DIR/logs/.
set -euo pipefail
cd "$(dirname "$0")/.."

STATE_DIR="${CONCLAVE_STATE_DIR:-.local}"
VENV="${CONCLAVE_VENV:-.local/venv}"
PYTHON="${PYTHON:-python3}"
EDGE_BIN="$STATE_DIR/bin/edge"
PID_FILE="$STATE_DIR/edge.pid"
ENV_FILE="$STATE_DIR/cloud.env"

venv() {
  local stamp="$VENV/.requirements.sha"
  local want
  want="$(sha256sum localstack/requirements.txt | cut -d' ' -f1)"
  if [[ -x "$VENV/bin/moto_server" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  echo "installing moto into $VENV ..."
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r localstack/requirements.txt
  echo "$want" > "$stamp"
}

build() {
  mkdir -p "$STATE_DIR/bin"
  go build -o "$EDGE_BIN" ./localstack/edge
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
  venv
  build
  mkdir -p "$STATE_DIR/logs"
  setsid "$EDGE_BIN" -moto-bin "$VENV/bin/moto_server" -state-dir "$STATE_DIR" \
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
      tail -n 30 "$STATE_DIR/logs/edge.stdout" "$STATE_DIR/logs/moto.log" >&2 || true
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
  # moto runs in its own process group; make sure no orphan keeps the port.
  if [[ -f "$ENV_FILE" ]]; then
    local moto
    moto="$(sed -n 's/^CONCLAVE_MOTO_PID=//p' "$ENV_FILE")"
    [[ -n "$moto" ]] && kill -TERM -- "-$moto" 2>/dev/null || true
  fi
  rm -f "$PID_FILE" "$ENV_FILE"
  echo "local cloud stopped"
}

status() {
  if running && [[ -f "$ENV_FILE" ]]; then
    echo "running (pid $(edge_pid))"
    cat "$ENV_FILE"
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
  venv
  build
  exec "$EDGE_BIN" -moto-bin "$VENV/bin/moto_server" -state-dir "$STATE_DIR"
}

case "${1:-}" in
  venv) venv ;;
  up) up ;;
  down) down ;;
  status) status ;;
  run) run ;;
  *) echo "usage: $0 venv|up|down|status|run" >&2; exit 2 ;;
esac
