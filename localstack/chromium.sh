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
command -v chromium >/dev/null 2>&1 && exit 0
if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "Chromium is missing: install it (Debian/Ubuntu: sudo apt-get install chromium), or set CONCLAVE_CHROMIUM to its path" >&2
  exit 1
fi
echo "installing chromium with apt-get ..."
export DEBIAN_FRONTEND=noninteractive
# force-unsafe-io: dpkg without an fsync per file (a fresh CI machine; a
# crash mid-install leaves a package to install again, nothing else).
install=(apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io chromium)
# The package lists may be missing on a fresh machine: fetched once then.
if ! "${install[@]}"; then
  apt-get update -q && "${install[@]}"
fi
command -v chromium >/dev/null 2>&1
