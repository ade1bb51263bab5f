#!/usr/bin/env bash
# Learned-prefetch benchmark (see prefetch_bench.py and Benchmarks/README.md):
#
#   Benchmarks/prefetch_bench.sh [--latency-ms 20] [--rounds 3] [--think-ms 150] [--binary PATH]
#
# Builds ODRFS in release unless --binary is given; needs root (FUSE) and python3.
set -euo pipefail
source "$(dirname "$0")/../mount-scripts/as-root.sh"
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
binary="" args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
[[ -d /opt/swift/usr/bin && ":$PATH:" != *":/opt/swift/usr/bin:"* ]] && export PATH="/opt/swift/usr/bin:$PATH"
if [ -z "$binary" ]; then
    (cd "$repo" && swift build -c release --product odrfs >&2)
    binary="$(cd "$repo" && swift build -c release --show-bin-path)/odrfs"
fi
work="$(mktemp -d /tmp/odrfs-prefetch-bench.XXXXXX)"
trap 'fusermount3 -uz "$work/mnt" 2>/dev/null || true; rm -rf "$work"' EXIT
python3 "$here/prefetch_bench.py" --binary "$binary" --work "$work" "${args[@]}"
