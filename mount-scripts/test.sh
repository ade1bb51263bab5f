#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test, including
# real FUSE mounts (which need root or a user allowed to mount FUSE).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -d /opt/swift/usr/bin && ":$PATH:" != *":/opt/swift/usr/bin:"* ]] && export PATH="/opt/swift/usr/bin:$PATH"
mount-scripts/setup.sh
swift build
# --no-parallel: mount tests block threads while real tools run; in parallel on two
# cores they starve the cooperative pool that deferred FUSE replies run on.
swift test --no-parallel "$@"
# Then every fuzz target for a short fixed time (a whole run, not a filtered one).
# ODRFS_FUZZ_SECONDS=0 skips it; mount-scripts/fuzz.sh runs it alone for longer.
fuzz_seconds="${ODRFS_FUZZ_SECONDS:-10}"
if [[ $# -eq 0 && "$fuzz_seconds" != 0 ]]; then
    mount-scripts/fuzz.sh "$fuzz_seconds"
fi
