import Foundation

extension StatusSnapshot {
    /// The human table of `odrfs status`, also suitable for `<mountpoint>/.odrfs/status`.
    ///
    /// The revision line (mounted, available, last check) and a blank line, then one row per tag (state aggregated over its packs, bytes, packs, preservation
    /// priority), a blank line, then one row per pack (id, tags, state with a percentage
    /// while downloading, size, retain count, completed fetches, priority, last access
    /// in UTC ISO 8601), then the totals and cache lines, the origin's lines, and the variants served. Columns are separated by at
    /// least two spaces so scripts can split on runs of whitespace; ids never contain spaces.
    public func renderTable() -> String {
        // First, so that scripts reading the pack table up to its totals see no new rows.
        var text = revisionLine()
        if !tags.isEmpty {
            var rows = [["TAG", "STATE", "BYTES", "PRIORITY", "PACKS"]]
            for tag in tags {
                rows.append([
                    tag.tag, Self.stateText(tag.state, percent: nil), String(tag.bytes),
                    String(format: "%.2f", tag.preservationPriority), tag.packs.joined(separator: ","),
                ])
            }
            text += Self.align(rows) + "\n"
        }
        var rows = [["PACK", "TAGS", "STATE", "BYTES", "RETAINS", "FETCHES", "PRIORITY", "LAST-ACCESS"]]
        for pack in packs {
            rows.append([
                pack.id,
                pack.tags.isEmpty ? "-" : pack.tags.joined(separator: ","),
                Self.stateText(pack.state, percent: pack.percent),
                String(pack.bytes),
                String(pack.retainCount),
                String(pack.fetchCount),
                String(format: "%.2f", pack.preservationPriority),
                pack.lastAccess.map { $0.formatted(.iso8601) } ?? "-",
            ])
        }
        text += Self.align(rows)
        let local = packs.filter { $0.state == .downloaded || $0.state == .inUse }
        let localBytes = local.reduce(Int64(0)) { $0 + $1.bytes }
        let totalBytes = packs.reduce(Int64(0)) { $0 + $1.bytes }
        let inUseBytes = packs.filter { $0.state == .inUse }.reduce(Int64(0)) { $0 + $1.bytes }
        text += "total: \(local.count)/\(packs.count) packs local, \(localBytes)/\(totalBytes) bytes local, \(inUseBytes) bytes in use\n"
        var line = "cache: \(cache.cachedBytes) bytes cached, \(cache.reservedBytes) reserved"
        if cache.orphanBytes > 0 { line += " (\(cache.orphanBytes) from older bundle versions or other variants)" }
        if let metadataBytes = cache.metadataBytes, metadataBytes > 0 { line += ", \(metadataBytes) pinned in file indexes and manifest" }
        line += ", budget " + (cache.budget.map(String.init) ?? "none")
        line += ", free " + (cache.availableBytes.map(String.init) ?? "unknown")
        if let minimumFree = cache.minimumFree { line += " (min \(minimumFree))" }
        line += ", in use \(cache.inUseBytes)/\(cache.maximumInUse)"
        line += ", evictions \(cache.evictionCount)"
        if let wireBytes = cache.wireBytes { line += ", fetched \(wireBytes) bytes on the wire" }
        // On the cache line, not a line of its own: scripts that split the pack table
        // stop at `total:` and `cache:`.
        if let readPath { line += ", reads \(readPath)" }
        if cache.isOverBudget { line += ", OVER BUDGET (" + overBudgetCause() + ")" }
        return text + line + "\n" + renderOrigin() + renderVariants()
    }

    /// "variants: locale=it, tcf=astc"; nothing for a bundle without variants. Last, so
    /// scripts splitting the tables above see no new rows.
    private func renderVariants() -> String {
        guard !variants.isEmpty else { return "" }
        return "variants: " + variants.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ") + "\n"
    }

    /// Why a cache over its budget stays there: retained packs, or metadata no purge can free.
    private func overBudgetCause() -> String {
        if let metadataBytes = cache.metadataBytes, let budget = cache.budget, metadataBytes > budget {
            return "file indexes and manifest alone exceed it; only retained packs are kept"
        }
        return "retained packs cannot be purged"
    }

    /// "origin: online|offline (last contact …)" and one line per server; nothing for a local dist dir.
    private func renderOrigin() -> String {
        guard !mirrors.isEmpty || !online else { return "" }
        var text = "origin: " + (online ? "online" : "OFFLINE (only cached packs open)")
        text += ", last contact " + (lastOriginContact.map { $0.formatted(.iso8601) } ?? "never") + "\n"
        for mirror in mirrors {
            var line = "mirror: \(mirror.url)  " + (mirror.reachable ? "reachable" : "unreachable")
            if let rtt = mirror.rttMilliseconds { line += String(format: "  rtt %.1f ms", rtt) }
            if let errors = mirror.errors { line += "  errors \(errors)" }
            if let error = mirror.error { line += "  last error: \(error)" }
            text += line + "\n"
        }
        return text
    }

    /// `revision: 3, available 4 (update available), checked 2026-…`; empty when the daemon
    /// did not say (an older daemon).
    private func revisionLine() -> String {
        guard let revision else { return "" }
        var line = "revision: \(revision)"
        if let availableRevision, let lastUpdateCheck {
            line += ", available \(availableRevision)"
            if availableRevision > revision { line += " (update available: odrfs update)" }
            line += ", checked \(lastUpdateCheck.formatted(.iso8601))"
        } else {
            line += ", no update check yet"
        }
        return line + "\n\n"
    }

    private static func stateText(_ state: State, percent: Int?) -> String {
        guard state == .downloading, let percent else { return state.rawValue }
        return "downloading(\(percent)%)"
    }

    private static func align(_ rows: [[String]]) -> String {
        guard let columns = rows.first?.count else { return "" }
        let widths = (0..<columns).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == columns - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}
