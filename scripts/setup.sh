#!/usr/bin/env bash
# Installs the system packages gangplan's build needs when they are missing: HiGHS is built
# from source by the highs-sys crate, which needs cmake, a C++ compiler and libclang (bindgen).
# Debian/Ubuntu only; needs root (or sudo) the first time. Idempotent.
set -euo pipefail
need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v g++ >/dev/null 2>&1 || need+=(g++)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || ls /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1 || need+=(libclang-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null || true
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
