import Foundation
import ODRFSCore

/// What `odrfs build` produced: one row per pack, totals and warnings.
public struct BuildReport: Sendable, Equatable {
    /// One pack of the bundle.
    public struct Row: Sendable, Equatable {
        public var id: PackID
        public var tags: [ODRFSCore.Tag]
        public var files: Int
        /// Size of the pack file, i.e. what a download of it costs.
        public var bytes: ByteCount
        /// Size of the compressed pack file in the dist dir (what crosses the wire), if compressed.
        public var compressedBytes: ByteCount?
    }

    public var distDir: String
    public var bundleVersion: ContentHash
    /// In manifest order: base first.
    public var rows: [Row]
    /// Directories, files and symlinks in the index, the root included.
    public var indexEntries: Int
    public var warnings: [String]
    /// The manifest's revision (1 for a fresh dist dir).
    public var revision: Int64 = Manifest.unrevisioned
    /// The key that signed the manifest, if any.
    public var signer: KeyID?
    /// The manifest's expiry, Unix seconds, if any.
    public var expires: Int64?
    /// Packs whose content the dist dir already held (unchanged since a kept revision).
    public var reusedPacks = 0
    /// The revisions whose objects the dist dir keeps (`--keep`), oldest first.
    public var keptRevisions: [Int64] = []
    /// Packs and indexes removed because no kept revision names them, and their size.
    public var removedObjects = 0
    public var removedBytes = ByteCount.zero

    public var totalFiles: Int { rows.reduce(0) { $0 + $1.files } }
    public var totalBytes: ByteCount { rows.reduce(ByteCount.zero) { $0 + $1.bytes } }

    /// Aligned columns (PACK, TAGS, FILES, BYTES), then a totals line.
    public func table() -> String {
        let header = ["PACK", "TAGS", "FILES", "BYTES"]
        let cells = rows.map { row in
            [row.id.rawValue, row.tags.isEmpty ? "-" : row.tags.map(\.name).joined(separator: ", "),
             String(row.files), row.bytes.description]
        }
        var widths = header.map(\.count)
        for line in cells {
            for (column, cell) in line.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        func render(_ line: [String]) -> String {
            let pack = line[0].padding(toLength: widths[0], withPad: " ", startingAt: 0)
            let tags = line[1].padding(toLength: widths[1], withPad: " ", startingAt: 0)
            // Numbers are right-aligned so that magnitudes line up.
            let files = String(repeating: " ", count: widths[2] - line[2].count) + line[2]
            let bytes = String(repeating: " ", count: widths[3] - line[3].count) + line[3]
            return "\(pack)  \(tags)  \(files)  \(bytes)"
        }
        var lines = [render(header)] + cells.map(render)
        lines = lines.map { String($0.reversed().drop { $0 == " " }.reversed()) }
        let packs = rows.count == 1 ? "1 pack" : "\(rows.count) packs"
        let files = totalFiles == 1 ? "1 file" : "\(totalFiles) files"
        lines.append("total: \(packs), \(files), \(totalBytes), bundle version \(bundleVersion.hex.prefix(12))")
        let compressed = rows.compactMap(\.compressedBytes)
        if !compressed.isEmpty {
            let total = compressed.reduce(ByteCount.zero, +)
            let percent = totalBytes.value > 0 ? Double(total.value) * 100 / Double(totalBytes.value) : 100
            lines.append("compressed: \(total) in packs/ (\(String(format: "%.1f", percent)) % of the tar bytes)")
        }
        var manifestLine = "revision \(revision)"
        if let signer { manifestLine += ", signed by key \(signer)" }
        if let expires { manifestLine += ", expires \(Date(timeIntervalSince1970: Double(expires)).formatted(.iso8601))" }
        lines.append(manifestLine)
        if !keptRevisions.isEmpty {
            let kept = keptRevisions.map(String.init).joined(separator: ", ")
            let reused = reusedPacks == 1 ? "1 pack" : "\(reusedPacks) packs"
            let removed = removedObjects == 1 ? "1 object" : "\(removedObjects) objects"
            lines.append("kept revisions \(kept); \(reused) unchanged, not rewritten; \(removed) of older revisions removed (\(removedBytes))")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
