#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ODRFSCore

extension OutputDirectory {
    /// What ``prune(keeping:current:)`` kept and removed.
    struct Pruning: Sendable {
        /// The revisions whose manifests and objects stay, oldest first.
        var keptRevisions: [Int64] = []
        var removedRevisions: [Int64] = []
        /// Packs and indexes that no kept revision names any more.
        var removedObjects = 0
        var removedBytes = ByteCount.zero
        /// Why nothing was removed, when something stood in the way.
        var warnings: [String] = []
    }

    /// Keeps the `keep` newest recorded revisions up to `current` (which is always one of
    /// them) and removes the rest: their `manifests/<revision>.json` records first, then
    /// every pack and index that no kept revision names. Runs after the switch, so the
    /// published revision is complete whatever happens here; a kill half-way leaves
    /// objects or records that the next build's pruning removes. When a kept record cannot
    /// be read, no object is removed (it might name any of them).
    func prune(keeping keep: Int, current: Int64) -> Pruning {
        var pruning = Pruning()
        let manifests = path + "/" + Self.manifestsDirectory
        let recorded = ((try? POSIXFile.names(in: manifests)) ?? []).compactMap(Self.recordedRevision).sorted()
        let candidates = recorded.filter { $0 < current }
        let kept = Array(candidates.suffix(max(0, keep - 1))) + [current]
        pruning.keptRevisions = kept
        pruning.removedRevisions = recorded.filter { !kept.contains($0) }
        var named: Set<String> = []
        for revision in kept {
            let record = path + "/" + Self.archivedManifest(revision)
            guard let data = FileManager.default.contents(atPath: record), let manifest = try? Manifest.decode(data) else {
                pruning.warnings.append("cannot read the record '\(record)' of a kept revision; no pack or index was removed")
                return pruning
            }
            named.insert(manifest.index.file)
            for pack in manifest.packs { named.insert(pack.file) }
        }
        for revision in pruning.removedRevisions {
            let record = path + "/" + Self.archivedManifest(revision)
            unlink(record)
            unlink(record + ".sig")
        }
        POSIXFile.syncDirectory(manifests)
        let objectKinds = [(Self.packsDirectory, [".tar", PackCompression.fileExtension]),
                           (Self.indexDirectory, ["." + FileIndex.fileExtension])]
        for (directory, suffixes) in objectKinds {
            for name in (try? POSIXFile.names(in: path + "/" + directory)) ?? [] {
                let relative = directory + "/" + name
                // Only content-addressed names are the build's; anything else is left alone.
                guard suffixes.contains(where: { Self.isContentAddressed(name, suffix: $0) }), !named.contains(relative) else { continue }
                let size = POSIXFile.regularFileSize(path + "/" + relative) ?? 0
                if unlink(path + "/" + relative) == 0 {
                    pruning.removedObjects += 1
                    pruning.removedBytes = pruning.removedBytes + ByteCount(size)
                }
            }
            POSIXFile.syncDirectory(path + "/" + directory)
        }
        return pruning
    }

    /// The revision of a record's name (`42.json`), or nil for any other name.
    static func recordedRevision(_ name: String) -> Int64? {
        guard name.hasSuffix(".json") else { return nil }
        let digits = name.dropLast(5)
        guard !digits.isEmpty, digits.count <= 19, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let revision = Int64(digits), BundleLimits.revisionRange.contains(revision) else { return nil }
        return revision
    }

    /// `<64 lowercase hex digits><suffix>`.
    static func isContentAddressed(_ name: String, suffix: String) -> Bool {
        guard name.hasSuffix(suffix) else { return false }
        let hex = name.utf8.dropLast(suffix.utf8.count)
        return hex.count == 64 && hex.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
