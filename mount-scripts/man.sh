#!/usr/bin/env bash
# Regenerates docs/odrfs.1, the man page, from the commands themselves with
# swift-argument-parser's generate-manual plugin (one page, every subcommand). Run it
# after changing a command, option or help text; HelpTests fails while the page lacks a
# command or option of the binary. The date is the last commit's, so the page does not
# change by itself. Install with: install -Dm644 docs/odrfs.1 /usr/local/share/man/man1/odrfs.1
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -d /opt/swift/usr/bin && ":$PATH:" != *":/opt/swift/usr/bin:"* ]] && export PATH="/opt/swift/usr/bin:$PATH"
date=$(git log -1 --format=%cs 2>/dev/null || date -u +%F)
# Debug: the plugin builds every product first, and a debug build is the one tests share.
swift package plugin generate-manual --configuration debug --date "$date"
mkdir -p docs
cp "$(find .build/plugins/GenerateManual/outputs -name odrfs.1 | head -1)" docs/odrfs.1
echo "man: wrote docs/odrfs.1 ($(wc -l <docs/odrfs.1) lines)"
