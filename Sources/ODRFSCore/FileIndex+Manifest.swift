/// Cross-checks an index with the manifest that names it. ``FileIndex/init(contentsOf:)``
/// proves the index consistent with itself; only the manifest knows how many packs there are
/// and how large each is, so a mount must call ``validate(against:)`` before it trusts a
/// file's pack number (``Manifest/pack(_:)`` traps on an unknown one) or content extent.
extension FileIndex {
    /// Throws unless the index has the manifest's entry count and pack count, and every
    /// regular file's bytes (`dataOffset ..< dataOffset + size`) lie inside its pack.
    /// O(entries), no allocation per entry; a large index is checked in parts on several cores.
    public func validate(against manifest: Manifest) throws(FileIndexError) {
        guard entryCount == manifest.index.entries else {
            throw FileIndexError(.corrupt, "has \(entryCount) entries but the manifest says \(manifest.index.entries)")
        }
        guard packCount == manifest.packs.count else {
            throw FileIndexError(.corrupt, "is for \(packCount) packs but the manifest has \(manifest.packs.count)")
        }
        let packs = manifest.packs
        _ = try inParts(count) { [self] entries throws(FileIndexError) in
            typealias F = FileIndexLayout.Record
            for n in entries where kind(n) == .regularFile {
                let r = record(n)
                // Validated at init: pack < packCount == packs.count, and offset + size ≤ Int64.max.
                let pack = packs[Int(r.u32(F.pack))]
                let end = r.u64(F.data) + r.u64(F.size)
                guard end <= UInt64(max(pack.bytes.value, 0)) else {
                    throw FileIndexError(.corrupt, "entry \(n) ('\(path(of: EntryNumber(n)))') ends at byte \(end) of pack '\(pack.id)', which has \(pack.bytes.value)")
                }
            }
            return 0
        }
    }
}
