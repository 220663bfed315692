#!/usr/bin/env bash
# Installs the system packages gangplan's build needs when they are missing: HiGHS is built
# from source by the highs-sys crate, which needs cmake, a C++ compiler and libclang (bindgen).
# Debian/Ubuntu only; needs root (or sudo) the first time. Idempotent.
#
#   scripts/setup.sh             install what is missing
#   scripts/setup.sh --dry-run   print what would be installed ("setup: would install ...",
#                                or "setup: nothing to install") and change nothing
#
# GANGPLAN_SETUP_ROOT (default /) is the root under which the libclang check looks; the tests
# point it at a fake root to check the detection itself.
set -euo pipefail
root=${GANGPLAN_SETUP_ROOT:-}
root=${root%/}

# bindgen (clang-sys) loads libclang.so, libclang-N.so or libclang.so.N; libclang-cpp.so.N
# (the C++ interface, package libclang-cpp14) is a different library that bindgen cannot use.
has_libclang() {
  local dir f base
  for dir in "$root"/usr/lib/llvm-*/lib "$root"/usr/lib/x86_64-linux-gnu "$root"/usr/lib/aarch64-linux-gnu \
             "$root"/usr/lib64 "$root"/usr/lib "$root"/usr/local/lib; do
    [ -d "$dir" ] || continue
    for f in "$dir"/libclang*.so*; do
      [ -e "$f" ] || continue
      base=${f##*/}
      case "$base" in
        libclang.so | libclang.so.* | libclang-[0-9]*.so | libclang-[0-9]*.so.*) return 0 ;;
      esac
    done
  done
  return 1
}

need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v g++ >/dev/null 2>&1 || need+=(g++)
has_libclang || need+=(libclang-dev)

if [ "${1:-}" = "--dry-run" ]; then
  if [ ${#need[@]} -gt 0 ]; then echo "setup: would install ${need[*]}"; else echo "setup: nothing to install"; fi
  exit 0
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null || true
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
