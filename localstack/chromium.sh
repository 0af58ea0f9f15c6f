#!/usr/bin/env bash
# The browser of the console's tests (localstack/cloud/console_*_test.go):
# the system's Chromium, Debian's package (a browser build fetched by a test
# framework cannot be downloaded here). Found on PATH or at
# $CONCLAVE_CHROMIUM; when missing, installed with apt-get if this runs as
# root (CI: make test runs this beside vet, so the install overlaps the
# compile), otherwise it says what to install.
set -euo pipefail

if [[ -n "${CONCLAVE_CHROMIUM:-}" ]]; then
  [[ -x "$CONCLAVE_CHROMIUM" ]] && exit 0
  echo "CONCLAVE_CHROMIUM=$CONCLAVE_CHROMIUM is not an executable" >&2
  exit 1
fi
cd "$(dirname "$0")/.."
# shellcheck source=localstack/apt.sh
. localstack/apt.sh
apt_install ", or set CONCLAVE_CHROMIUM to its path" chromium=chromium
