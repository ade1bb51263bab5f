#!/usr/bin/env bash
# Installs what ODRFS needs on a fresh Debian 12 machine (as root, or through sudo when
# run by a user who has it: see as-root.sh).
# Idempotent: packages already present are not reinstalled.
set -euo pipefail
source "$(dirname "$0")/as-root.sh"

# nginx: the tests' origin and their caching proxy (proxy_cache); squid: the site's caching
# forward proxy (MountSquidTests); curl: header checks and the benchmark's floors; autofs: AutomountTests run their own
# automount on a private master map (the system's autofs service is not needed).
packages=(libfuse3-dev liburing-dev fuse3 attr pkg-config libsqlite3-dev libzstd-dev zstd ca-certificates nginx-light python3 gcc openssl curl squid autofs fiu-utils)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v swift >/dev/null 2>&1; then
    if [[ -x /opt/swift/usr/bin/swift ]]; then
        echo "setup: swift is in /opt/swift/usr/bin; add it to PATH" >&2
    else
        echo "setup: Swift 6.1 or later is required (https://www.swift.org/install/linux/)" >&2
    fi
    exit 1
fi

if [[ ! -e /dev/fuse ]]; then
    modprobe fuse 2>/dev/null || true
fi
[[ -e /dev/fuse ]] || { echo "setup: /dev/fuse is missing: this kernel or container has no FUSE" >&2; exit 1; }
echo "setup: ready (libfuse $(pkg-config --modversion fuse3), $(swift --version 2>/dev/null | head -1))"
