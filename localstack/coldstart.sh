#!/usr/bin/env bash
# coldstart.sh [BASE] [FUNCTIONS...]: each function's bootstrap size and
# init time at commit BASE (default HEAD~1) against the working tree,
# built as `make build` builds them (arm64 for the size, the host's
# architecture for the timing), measured by localstack/coldstart in
# alternating rounds (ROUNDS, default 30). Functions default to the
# expert-gate, conversations, task-worker and authorizer.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:-HEAD~1}"
shift || true
fns=("$@")
if [[ ${#fns[@]} -eq 0 ]]; then fns=(expert-gate conversations task-worker authorizer); fi
tmp="$(mktemp -d)"
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git worktree add --detach "$tmp/base" "$base" >/dev/null
build() { # src dir
  for fn in "${fns[@]}"; do
    (cd "$1" && CGO_ENABLED=0 go build -trimpath -tags lambda.norpc -ldflags='-s -w' -o "$2/$fn" "./functions/$fn" &&
      GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -tags lambda.norpc -ldflags='-s -w' -o "$2/$fn.arm64" "./functions/$fn")
  done
}
mkdir -p "$tmp/before" "$tmp/after"
build "$tmp/base" "$tmp/before"
build "$PWD" "$tmp/after"
echo "base $(git rev-parse --short "$base"), after $(git rev-parse --short HEAD)$(git diff --quiet || echo ' and the working tree')"
go run ./localstack/coldstart -before "$tmp/before" -after "$tmp/after" -rounds "${ROUNDS:-30}" "${fns[@]}"
