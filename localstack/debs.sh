#!/usr/bin/env bash
# The Debian packages make test needs, installed when missing in one
# apt-get run (as root; otherwise it says what to install): Chromium for
# the console's browser tests (localstack/chromium.sh alone) and qemu-user
# for make test-arm64 (localstack/qemu.sh alone). One run, not one each:
# apt-get's start and dpkg's triggers once (a cold CI run spent 17 s of
# CPU on the two installs, 10 s on one). CONCLAVE_CHROMIUM, when set,
# names the browser to use instead of Debian's.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=localstack/apt.sh
. localstack/apt.sh
pairs=(qemu-user=qemu-aarch64)
if [[ -n "${CONCLAVE_CHROMIUM:-}" ]]; then
  [[ -x "$CONCLAVE_CHROMIUM" ]] || { echo "CONCLAVE_CHROMIUM=$CONCLAVE_CHROMIUM is not an executable" >&2; exit 1; }
else
  pairs+=(chromium=chromium)
fi
apt_install ", or set CONCLAVE_CHROMIUM to a Chromium's path" "${pairs[@]}"
