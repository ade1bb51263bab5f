import Foundation
import ODRFSCore
import ODRFSStore

/// Renders the per-pack table shown at `<mountpoint>/.odrfs/status`.
///
/// One row per pack: its id, tags, the Xcode gauge state (with a percentage while
/// downloading), size, retain count, completed fetches and last access (UTC, ISO 8601),
/// then one totals line. Columns are separated by at least two spaces so scripts can
/// split on runs of whitespace; the pack id never contains spaces.
public struct StatusRenderer: Sendable {
    public let manifest: Manifest

    public init(manifest: Manifest) {
        self.manifest = manifest
    }

    public func render(_ packs: [PackStatus], cache: CacheStatus) -> String {
        let header = ["PACK", "TAGS", "STATE", "BYTES", "RETAINS", "FETCHES", "PRIORITY", "LAST-ACCESS"]
        var rows = [header]
        for pack in packs {
            rows.append([
                pack.id.rawValue,
                pack.tags.isEmpty ? "-" : pack.tags.map(\.name).joined(separator: ","),
                stateText(pack),
                String(pack.bytes.value),
                String(pack.retainCount),
                String(pack.fetchCount),
                String(format: "%.2f", pack.preservationPriority),
                pack.lastAccess.map(Self.timestamp) ?? "-",
            ])
        }
        var text = Self.align(rows)
        let local = packs.filter { $0.state == .downloaded || $0.state == .inUse }
        let localBytes = local.reduce(Int64(0)) { $0 + $1.bytes.value }
        let totalBytes = packs.reduce(Int64(0)) { $0 + $1.bytes.value }
        let inUseBytes = packs.filter { $0.state == .inUse }.reduce(Int64(0)) { $0 + $1.bytes.value }
        text += "total: \(local.count)/\(packs.count) packs local, \(localBytes)/\(totalBytes) bytes local, \(inUseBytes) bytes in use\n"
        var cacheLine = "cache: \(cache.cachedBytes) bytes cached"
        cacheLine += ", \(cache.reservedBytes) reserved"
        if cache.orphanBytes > 0 { cacheLine += " (\(cache.orphanBytes) from older bundle versions)" }
        cacheLine += ", budget " + (cache.limits.budget.map { "\($0.value)" } ?? "none")
        cacheLine += ", free " + (cache.availableBytes.map { "\($0)" } ?? "unknown")
        if let minimumFree = cache.limits.minimumFree { cacheLine += " (min \(minimumFree.value))" }
        cacheLine += ", in use \(cache.inUseBytes)/\(cache.limits.maximumInUse.value)"
        cacheLine += ", evictions \(cache.evictionCount)"
        if cache.isOverBudget { cacheLine += ", OVER BUDGET (retained packs cannot be purged)" }
        text += cacheLine + "\n"
        return text
    }

    private func stateText(_ pack: PackStatus) -> String {
        guard pack.state == .downloading else { return pack.state.rawValue }
        let percent = pack.bytes.value > 0 ? pack.bytesDownloaded.value * 100 / pack.bytes.value : 0
        return "downloading(\(percent)%)"
    }

    private static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
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
