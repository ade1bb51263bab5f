#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test, including
# real FUSE mounts (which need root or a user allowed to mount FUSE).
set -euo pipefail
source "$(dirname "$0")/as-root.sh"
cd "$(dirname "$0")/.."
[[ -d /opt/swift/usr/bin && ":$PATH:" != *":/opt/swift/usr/bin:"* ]] && export PATH="/opt/swift/usr/bin:$PATH"
mount-scripts/setup.sh
swift build
# In parallel: no test helper blocks the cooperative pool (waits are async; blocking
# calls run on threads of their own), and suites that load or disturb the machine are
# kept apart from timing-sensitive ones by the LoadIsolation trait.
swift test "$@"
# Then the Debian package (a release build with the Swift runtime linked in, lintian) on a
# clean Debian 12 root made by debootstrap: install, the README's tour, purge. Whole runs
# only; ODRFS_PACKAGE_TEST=0 skips it; mount-scripts/package-test.sh runs it alone.
if [[ $# -eq 0 && "${ODRFS_PACKAGE_TEST:-1}" != 0 ]]; then
    mount-scripts/package-test.sh
fi
# Then every fuzz target for a short fixed time (a whole run, not a filtered one).
# ODRFS_FUZZ_SECONDS=0 skips it; mount-scripts/fuzz.sh runs it alone for longer.
fuzz_seconds="${ODRFS_FUZZ_SECONDS:-10}"
if [[ $# -eq 0 && "$fuzz_seconds" != 0 ]]; then
    mount-scripts/fuzz.sh "$fuzz_seconds"
fi
