#!/usr/bin/env bash
# ODRFS benchmark: one command, one table (see Benchmarks/README.md).
#
#   Benchmarks/run.sh [--quick] [--latency-ms N] [--no-rclone] [--keep] [--binary PATH]
#                     [--s1-files N --s1-packs N] [--s1-shape tags|digits] [--only W1,W3,W6,W7,S1,S4,W8]
#                     [--rounds N] [--compress zstd[:LEVEL]|none] [--chunk-size SIZE]
#                     [--listing-modes default,always,never,auto,directories] [--s1-dir DIR]
#
# Builds ODRFS in release (unless --binary is given), a deterministic synthetic bundle,
# starts nginx behind a latency proxy, mounts ODRFS (and rclone, if installed), runs
# the workloads against them and native reads of the same files, and prints the table.
# Needs root (drop_caches, FUSE), nginx, python3 and a C compiler. Everything it starts is
# stopped by PID and every mount is lazily unmounted on exit, whatever happens.
set -euo pipefail
source "$(dirname "$0")/../mount-scripts/as-root.sh"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
binary="" keep=0 args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        --latency-ms|--s1-files|--s1-packs|--s1-shape|--only|--rounds|--compress|--chunk-size|--listing-modes|--s1-dir) args+=("$1" "$2"); shift 2 ;;
        --quick|--no-rclone) args+=("$1"); shift ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown option $1" >&2; exit 64 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (drop_caches, FUSE mounts)" >&2; exit 1; }

if [ -z "$binary" ]; then
    echo "building ODRFS (release)…" >&2
    (cd "$repo" && swift build -c release >&2)
    binary="$repo/.build/release/odrfs"
fi
[ -x "$binary" ] || { echo "run.sh: no odrfs binary at $binary" >&2; exit 1; }

work="$(mktemp -d /tmp/odrfs-bench.XXXXXX)"
: >"$work/pids"; : >"$work/mounts"
cleanup() {
    # The driver first (it tears down its own children on SIGTERM), then what is left.
    driver="$(cat "$work/driver" 2>/dev/null || true)"
    if [ -n "$driver" ] && kill "$driver" 2>/dev/null; then sleep 2; fi
    # Mounts first (lazily, so a stuck reader cannot block us), then our own PIDs.
    while read -r m; do [ -n "$m" ] && fusermount3 -uz "$m" 2>/dev/null || true; done <"$work/mounts"
    while read -r p; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done <"$work/pids"
    if [ "$keep" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The read loops are C (gcc, cc, or the clang every Swift toolchain ships).
cc="${CC:-$(command -v gcc || command -v cc || command -v clang)}"
"$cc" -O2 -o "$work/preadbench" "$here/preadbench.c"
# W2's floor, a no-op libfuse filesystem: needs libfuse3's headers (libfuse3-dev, which the
# test set-up installs); without them the table just leaves its row out.
floor=()
if pkg-config --exists fuse3 2>/dev/null; then
    "$cc" -O2 -o "$work/floorfs" "$here/floorfs.c" $(pkg-config --cflags --libs fuse3) && floor=(--floorfs "$work/floorfs")
fi
# In the background with `wait`, so a SIGTERM/SIGINT to this script runs the trap now.
python3 "$here/bench.py" --binary "$binary" --work "$work" --preadbench "$work/preadbench" "${floor[@]}" "${args[@]}" &
echo $! >"$work/driver"
wait $!
