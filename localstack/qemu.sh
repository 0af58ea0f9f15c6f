#!/usr/bin/env bash
# The arm64 emulator of make test-arm64: the float32 kernel's check
# (shared/platform/f32) built for arm64, the functions' architecture, and
# run by qemu-aarch64 (Debian's qemu-user, user-mode emulation: no kernel,
# no image). Found on PATH; when missing, installed with apt-get if this
# runs as root, otherwise it says what to install. make test installs it
# with Chromium, in one apt-get run (localstack/debs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=localstack/apt.sh
. localstack/apt.sh
apt_install "" qemu-user=qemu-aarch64
