import Foundation
import Logging
import ODRFSBuild
import ODRFSCore
@testable import ODRFSMount
import TestSupport
import Synchronization
import Testing

/// What an update plans from two revisions built by `odrfs build`: which packs changed,
/// which bytes the cache already has, and the inode numbers the kernel keeps.
@Suite struct UpdatePlanTests {
    typealias Loaded = (manifest: Manifest, index: FileIndex)

    /// Builds `files` (path → bytes) with two tags and loads the result.
    /// The index of the dist dir at `dist` as a version-2 writer would have written it: the
    /// block table (after the digest table) cut off and the version field set to 2.
    static func versionTwo(of dist: String) throws -> [UInt8] {
        let manifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: dist + "/manifest.json")))
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dist + "/" + manifest.index.file)))
        let field = { (offset: Int, width: Int) in (0..<width).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) } }
        // Header: entry count (u32) at 16, digest table offset (u64) at 56; 32 bytes per entry.
        bytes = Array(bytes.prefix(field(56, 8) + field(16, 4) * 32))
        bytes[8] = 2
        return bytes
    }

    static func build(_ files: [String: [UInt8]], in root: String, name: String,
                      compression: CompressionSetting = .default) throws -> Loaded {
        let source = root + "/" + name
        for (path, bytes) in files {
            let full = source + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
            // Same mtime in both revisions for unchanged files, as a real rebuild of an untouched tree.
            var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0)]
            _ = utimensat(AT_FDCWD, full, &times, 0)
        }
        try "tags:\n  A: [\"a/**\"]\n  B: [\"b/**\"]\n".write(toFile: source + "/odr.yaml", atomically: true, encoding: .utf8)
        let dist = root + "/" + name + "-dist"
        var builder = BundleBuilder(resourceRoot: source, logger: Logger(label: "test"))
        builder.compression = compression
        _ = try builder.build(into: dist)
        let manifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: dist + "/manifest.json")))
        return (manifest, try FileIndex(contentsOf: dist + "/" + manifest.index.file))
    }

    /// Bytes without the 256-byte period of `SyntheticBundle.bytes`, where content-defined
    /// chunking finds its cuts as in real files.
    static func noise(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix(seed: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    /// The bytes of the chunks of `path` in `new` whose digests no chunk of `old` has: what
    /// an update must fetch of it.
    static func newChunkBytes(_ path: String, old: FileIndex, new: FileIndex) -> (bytes: Int64, reused: Int) {
        let oldDigests = Set((old.chunks(of: old.lookup(path: path)!) ?? []).map(\.digest))
        let chunks = new.chunks(of: new.lookup(path: path)!) ?? []
        return (chunks.filter { !oldDigests.contains($0.digest) }.reduce(0) { $0 + $1.length },
                chunks.count { oldDigests.contains($0.digest) })
    }

    static let revision1: [String: [UInt8]] = [
        "readme.txt": Array("base\n".utf8),
        "a/one.bin": SyntheticBundle.bytes(5_000, seed: 1),
        "a/two.bin": noise(2_500_000, seed: 2),
        "a/three.bin": SyntheticBundle.bytes(7_000, seed: 3),
        "b/four.bin": SyntheticBundle.bytes(3_000, seed: 4),
    ]

    /// Revision 2: one small file of A rewritten, 4 KiB changed inside A's big file, a file added to A; B untouched.
    static var revision2: [String: [UInt8]] {
        var files = revision1
        files["a/three.bin"] = SyntheticBundle.bytes(7_000, seed: 33)
        var two = revision1["a/two.bin"]!
        for i in 1_500_000..<1_504_096 { two[i] ^= 0xFF }
        files["a/two.bin"] = two
        files["a/added.txt"] = Array("new\n".utf8)
        return files
    }

    @Test func onlyChangedBytesAreRemote() throws {
        let root = try TemporaryDirectory()
        let old = try Self.build(Self.revision1, in: root.path, name: "r1")
        let new = try Self.build(Self.revision2, in: root.path, name: "r2")
        let local = Set(old.manifest.packs.indices.map { PackNumber(UInt32($0)) })
        let plan = UpdatePlan.make(mounted: old.manifest, mountedIndex: old.index, local: local,
                                   available: new.manifest, availableIndex: new.index)
        #expect(plan.changedPacks.map { new.manifest.pack($0).id.rawValue } == ["A"])
        let fetch = try #require(plan.fetches.first)
        let pack = new.manifest.pack(fetch.pack)
        #expect(fetch.assembly.rebuildsFraming, "replaying the tar writer over the index did not reproduce the builder's pack")
        #expect(fetch.reusedBytes + fetch.downloadBytes == pack.bytes.value)
        // Remote: the rewritten and the added file whole, and the big file's one changed block.
        let extent = { (path: String) -> Range<Int64> in
            let entry = new.index.entry(new.index.lookup(path: path)!)!
            return entry.packOffset..<entry.packEnd
        }
        for path in ["a/three.bin", "a/added.txt"] {
            #expect(fetch.assembly.remote.contains { $0.lowerBound <= extent(path).lowerBound && $0.upperBound >= extent(path).upperBound }, "\(path)")
        }
        #expect(!fetch.assembly.remote.contains { $0.overlaps(extent("a/one.bin")) }, "an unchanged file is fetched")
        // The added file shifts the pack's chunks, so no chunk of the big file matches; its
        // content-defined chunks (index version 4) find every chunk but those holding the change.
        let (changedChunks, reusedChunks) = Self.newChunkBytes("a/two.bin", old: old.index, new: new.index)
        #expect(changedChunks >= 4096 && changedChunks <= 2 * 256 * 1024, "\(changedChunks)")
        let changed = ["a/three.bin", "a/added.txt"].reduce(Int64(0)) { $0 + Int64(extent($1).count) } + changedChunks
        #expect(fetch.downloadBytes == changed, "\(fetch.downloadBytes)")
        let change = (extent("a/two.bin").lowerBound + 1_500_000)..<(extent("a/two.bin").lowerBound + 1_504_096)
        #expect(fetch.assembly.remote.contains { $0.lowerBound <= change.lowerBound && $0.upperBound >= change.upperBound })
        #expect(reusedChunks >= 20 && fetch.assembly.blocks.count == reusedChunks, "every unchanged chunk is copied")
        // Block-planned, so not guessed from its old version as well.
        #expect(!fetch.assembly.speculative.contains { $0.target == extent("a/two.bin").lowerBound })
        // What crosses the wire: for a compressed pack (the default), the frames the remote
        // spans touch, which follow the big file's chunks; for a plain one, the spans.
        if let table = try FrameTable(validating: pack, chunkSize: new.manifest.chunkSize) {
            let runs = table.frameRuns(touching: fetch.assembly.remote)
            #expect(!runs.isEmpty && fetch.wireBytes == table.compressedBytes(ofFrameRuns: runs))
            #expect(table.frameCount > table.count, "the big file's chunks cut the frames")
            // Small files share a frame with their neighbours (here the big file's first chunk).
            #expect(fetch.wireBytes < changed + 2 * 256 * 1024 && fetch.wireBytes < table.compressedBytes / 4, "\(fetch.wireBytes)")
        } else {
            #expect(fetch.wireBytes == fetch.downloadBytes)
        }
        #expect(plan.downloadBytes == fetch.wireBytes)
    }

    /// Issue 13's W8 in small: 1 MiB changed at an offset aligned to nothing in a 3.5 MB file
    /// of a plain pack. The change straddles two 1 MiB chunks; content-defined chunks plan
    /// the chunks it touches, not the two manifest chunks.
    @Test func unalignedMebibyteChangeFetchesLittleMoreThanTheChange() throws {
        let root = try TemporaryDirectory()
        var files = Self.revision1
        files["a/big.bin"] = Self.noise(3_500_000, seed: 5)
        let old = try Self.build(files, in: root.path, name: "r1", compression: .none)
        let oldDist = root.path + "/r1-dist"
        let changeStart = 1_000_003, changeLength = 1 << 20
        var big = files["a/big.bin"]!
        for i in changeStart..<(changeStart + changeLength) { big[i] = ~big[i] }
        files["a/big.bin"] = big
        let new = try Self.build(files, in: root.path, name: "r2", compression: .none)
        #expect(new.index.chunking == .contentDefined(.standard))
        let local = Set(old.manifest.packs.indices.map { PackNumber(UInt32($0)) })
        let plan = UpdatePlan.make(mounted: old.manifest, mountedIndex: old.index, local: local,
                                   available: new.manifest, availableIndex: new.index)
        let fetch = try #require(plan.fetches.first)
        #expect(plan.fetches.count == 1)
        #expect(fetch.wireBytes == fetch.downloadBytes, "a plain pack moves exactly its spans")
        // At most the chunks whose bytes changed: the change and the partly changed chunks
        // around it (less where an unchanged manifest chunk of the pack covers part of them).
        let (changedChunks, _) = Self.newChunkBytes("a/big.bin", old: old.index, new: new.index)
        #expect(fetch.downloadBytes <= changedChunks, "\(fetch.downloadBytes)")
        #expect(fetch.downloadBytes >= Int64(changeLength) && fetch.downloadBytes <= Int64(changeLength) + 2 * 256 * 1024, "\(fetch.downloadBytes)")
        #expect(Double(plan.downloadBytes) <= 1.25 * Double(changeLength), "\(plan.downloadBytes)")
        #expect(plan.reusedBytes + plan.downloadBytes == new.manifest.pack(fetch.pack).bytes.value)
        // A mount whose index predates block tables (version 2) plans as before: the big
        // file's old bytes guessed in, and the two chunks the change straddles counted.
        let v2 = try FileIndex(bytes: Self.versionTwo(of: oldDist))
        #expect(v2.chunking == nil)
        let filePlan = UpdatePlan.make(mounted: old.manifest, mountedIndex: v2, local: local,
                                       available: new.manifest, availableIndex: new.index)
        let fileFetch = try #require(filePlan.fetches.first)
        #expect(fileFetch.assembly.blocks.isEmpty)
        #expect(fileFetch.assembly.speculative.contains { $0.length == 3_500_000 })
        #expect(Double(fileFetch.downloadBytes) > 1.9 * Double(changeLength), "\(fileFetch.downloadBytes)")
        // The premise: chunk-granular reuse would fetch both chunks the change touches.
        let offset = new.index.entry(new.index.lookup(path: "a/big.bin")!)!.packOffset
        let chunk = new.manifest.chunkSize.value
        let straddled = (Int64(changeStart) + offset) / chunk != (Int64(changeStart + changeLength) + offset) / chunk
        #expect(straddled, "the change must straddle a chunk boundary for this test to mean anything")
    }

    @Test func unchangedFilesKeepTheirInodes() throws {
        let root = try TemporaryDirectory()
        let old = try Self.build(Self.revision1, in: root.path, name: "r1")
        var files = Self.revision2
        files.removeValue(forKey: "b/four.bin")   // and with it the directory b
        let new = try Self.build(files, in: root.path, name: "r2")
        let oldInodes = InodeMap(entryCount: old.index.entryCount)
        // As if both revisions' packs were local and the bytes of files with equal digests matched.
        let transition = RevisionTransition.make(from: old.index, oldInodes, old.manifest, to: new.index, new.manifest,
                                                 sameBytes: { _, _ in true })
        let inode = { (index: FileIndex, map: InodeMap, path: String) -> UInt64 in map.inode(for: index.lookup(path: path)!).rawValue }
        #expect(inode(new.index, transition.inodes, "a/one.bin") == inode(old.index, oldInodes, "a/one.bin"))
        #expect(inode(new.index, transition.inodes, "readme.txt") == inode(old.index, oldInodes, "readme.txt"))
        #expect(inode(new.index, transition.inodes, "a") == inode(old.index, oldInodes, "a"))
        #expect(transition.inodes.inode(for: .root).rawValue == 1)
        // Changed and new entries get numbers no earlier revision used.
        for path in ["a/three.bin", "a/two.bin", "a/added.txt"] {
            #expect(inode(new.index, transition.inodes, path) >= oldInodes.nextFreeInode, "\(path)")
        }
        #expect(transition.inodes.controlDirectory == oldInodes.controlDirectory)
        #expect(transition.inodes.node(for: oldInodes.controlDirectory) == .controlDirectory)
        // What the kernel must forget: the changed and removed names, and the listings that changed.
        let stale = Set(transition.staleEntries.map(\.name))
        #expect(stale == ["three.bin", "two.bin", "b"], "\(stale)")
        let staleDirectories = Set(transition.staleDirectories.map(\.rawValue))
        #expect(staleDirectories.isSuperset(of: [1, inode(old.index, oldInodes, "a")]), "\(staleDirectories)")
        // An inode of the old revision that is gone resolves to nothing.
        let removed = oldInodes.inode(for: old.index.lookup(path: "b/four.bin")!)
        #expect(new.index.lookup(path: "b") == nil)
        #expect(transition.inodes.node(for: removed) == nil)
    }

    /// Issue 26, item 8: equal digests in the two indexes only say which files to read; a
    /// file whose bytes are not shown the same becomes a new file, while one at the same
    /// place in an unchanged pack keeps its inode without a read.
    @Test func aDigestAloneKeepsNoInode() throws {
        let root = try TemporaryDirectory()
        let old = try Self.build(Self.revision1, in: root.path, name: "r1")
        let new = try Self.build(Self.revision2, in: root.path, name: "r2")
        let oldInodes = InodeMap(entryCount: old.index.entryCount)
        let asked = Mutex<[UInt64]>([])
        let transition = RevisionTransition.make(from: old.index, oldInodes, old.manifest, to: new.index, new.manifest,
                                                 sameBytes: { _, b in
                                                     asked.withLock { $0.append(b.dataOffset) }
                                                     return false
                                                 })
        let inode = { (index: FileIndex, map: InodeMap, path: String) -> UInt64 in map.inode(for: index.lookup(path: path)!).rawValue }
        // a/one.bin is unchanged, but its pack (A) changed: only its digest says so.
        let one = try #require(new.index.entry(new.index.lookup(path: "a/one.bin")!))
        #expect(asked.withLock { $0 } == [one.dataOffset], "asked about files other than the one whose digest claims it is unchanged")
        #expect(inode(new.index, transition.inodes, "a/one.bin") >= oldInodes.nextFreeInode)
        #expect(transition.staleEntries.contains { $0.name == "one.bin" })
        #expect(transition.refusedDigests == 1)
        // Pack B and the base pack did not change: their files keep their inodes, unread.
        #expect(inode(new.index, transition.inodes, "readme.txt") == inode(old.index, oldInodes, "readme.txt"))
        #expect(inode(new.index, transition.inodes, "b/four.bin") == inode(old.index, oldInodes, "b/four.bin"))
    }

    @Test func subtractingRanges() {
        #expect(PackAssemblyPlan.subtract([], from: [0..<10]) == [0..<10])
        #expect(PackAssemblyPlan.subtract([2..<4, 6..<8], from: [0..<10]) == [0..<2, 4..<6, 8..<10])
        #expect(PackAssemblyPlan.subtract([0..<10], from: [2..<4, 6..<8]) == [])
        #expect(PackAssemblyPlan.subtract([3..<7], from: [0..<5, 6..<10]) == [0..<3, 7..<10])
        #expect(PackAssemblyPlan.subtract([10..<20], from: [0..<10, 20..<30]) == [0..<10, 20..<30])
    }
}
