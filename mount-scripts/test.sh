#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test, including
# real FUSE mounts (which need root or a user allowed to mount FUSE).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -d /opt/swift/usr/bin && ":$PATH:" != *":/opt/swift/usr/bin:"* ]] && export PATH="/opt/swift/usr/bin:$PATH"
mount-scripts/setup.sh
swift build
swift test "$@"
