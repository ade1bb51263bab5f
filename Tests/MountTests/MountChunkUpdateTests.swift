import Foundation
import Logging
import ODRFSBuild
import ODRFSCore
import TestSupport
import Testing

/// Issue 27, items 1-3: content-defined chunks make an update cost what changed, whatever
/// an edit did to the offsets after it; chunks are found in any local pack, of this bundle
/// or of another bundle of the store; an index of the previous format still mounts and updates.
@Suite("Updates by content-defined chunks", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountChunkUpdateTests {
    /// big.bin with `count` new bytes inserted at `offset`.
    static func inserting(_ count: Int, at offset: Int, into bytes: [UInt8]) -> [UInt8] {
        var edited = bytes
        edited.insert(contentsOf: TestBundle.pseudoRandom(count, seed: 99), at: offset)
        return edited
    }

    /// The bytes of `new`'s chunks of `path` whose digests `old` lacks: what an update of it must fetch.
    static func unmatchedChunkBytes(_ path: String, old: FileIndex, new: FileIndex) throws -> Int64 {
        let oldEntry = try #require(old.lookup(path: path)), newEntry = try #require(new.lookup(path: path))
        let known = Set((old.chunks(of: oldEntry) ?? []).map(\.digest))
        let chunks = try #require(new.chunks(of: newEntry))
        return chunks.filter { !known.contains($0.digest) }.reduce(0) { $0 + $1.length }
    }

    static func index(_ dist: String) throws -> FileIndex {
        let manifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: dist + "/manifest.json")))
        return try FileIndex(contentsOf: dist + "/" + manifest.index.file)
    }

    @Test("100 bytes inserted near the start of a 3 MiB file (default build: zstd packs): the update fetches the frames of a chunk or two, not the shifted rest, and reads back exactly")
    func insertionFetchesAFewChunks() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let server = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serve-\($0)", port: $0) }
        try await fixture.mount(origin: server.url)
        let old = try #require(TestBundle.files["big.bin"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(old))
        let oldIndex = try Self.index(fixture.dist)

        let big = Self.inserting(100, at: 200_000, into: old)
        try Data(big).write(to: URL(fileURLWithPath: fixture.source + "/big.bin"))
        let rebuild = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(rebuild.status == 0, "\(rebuild.stderr)")
        let pack = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Big" })
        let table = try #require(try FrameTable(validating: pack, chunkSize: fixture.manifest.chunkSize))
        #expect(table.frameCount > table.count, "the big file's chunks cut the frames")
        let unmatched = try Self.unmatchedChunkBytes("big.bin", old: oldIndex, new: try Self.index(fixture.dist))
        // One or two chunks around the insertion: everything after it moved by 100 bytes.
        #expect(unmatched >= 100 && unmatched <= 2 * 256 * 1024, "\(unmatched) bytes of chunks changed")

        let check = try MountUpdateTests.json(try await fixture.odrfs(["update", fixture.mountpoint, "--check", "--json"]).stdout)
        let planned = try #require(check["download_bytes"] as? Int)
        let reused = try #require(check["reused_bytes"] as? Int)
        // Random bytes do not compress: a frame is its chunk plus a few bytes of framing.
        let limit = Int(unmatched) + 8 * 1024
        #expect(planned >= 100 && planned <= limit, "planned \(planned) bytes for a 100-byte insertion")
        #expect(reused >= old.count - 2 * 256 * 1024, "reused only \(reused) bytes")

        let before = MountUpdateTests.bytesServed(server.logText, file: pack.file)
        let update = try await fixture.odrfs(["update", fixture.mountpoint, "--json"])
        try #require(update.status == 0, "\(update.stderr)\n\(fixture.log)")
        let served = MountUpdateTests.bytesServed(server.logText, file: pack.file) - before
        #expect(served >= 100 && served <= limit + 1024, "fetched \(served) bytes of a \(table.compressedBytes)-byte pack")
        let readBack = try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(big)
        #expect(readBack, "big.bin differs from the source after the update")
        #expect(!fixture.log.contains("downloading it whole"), "the assembly fell back to a whole download")
        #expect(!fixture.log.contains("do not verify"), "\(fixture.log)")
    }

    /// Builds `source` into `dist` as the previous release did: a version-3 index (64 KiB
    /// blocks, truncated hashes) and one frame per chunk.
    static func buildVersionThree(_ source: String, into dist: String) throws {
        var builder = BundleBuilder(resourceRoot: source, logger: Logger(label: "test"))
        builder.indexChunking = .fixedBlocks(.kibibytes(64))
        _ = try builder.build(into: dist)
    }

    @Test("a bundle whose index is of the previous format (version 3) mounts and reads, updates to a version-3 revision by blocks, then to a version-4 one")
    func previousIndexFormatMountsAndUpdates() async throws {
        let fixture = try MountFixture()
        try TestBundle.write(to: fixture.source)
        try Self.buildVersionThree(fixture.source, into: fixture.dist)
        let first = try Self.index(fixture.dist)
        #expect(first.version == 3 && first.chunking == .fixedBlocks(.kibibytes(64)))
        let firstPack = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Big" })
        #expect(firstPack.compression?.frames.allSatisfy { $0.size == nil } == true, "a version-3 build keeps one frame per chunk")
        let server = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serve-\($0)", port: $0) }
        try await fixture.mount(origin: server.url)
        for (path, bytes) in TestBundle.files {
            let same = try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/" + path)) == Data(bytes)
            #expect(same, "\(path) differs")
        }

        // Revision 2, still version 3: 4 KiB changed in place; the blocks find the rest.
        var big = try #require(TestBundle.files["big.bin"])
        for i in 2_000_000..<2_004_096 { big[i] = ~big[i] }
        try Data(big).write(to: URL(fileURLWithPath: fixture.source + "/big.bin"))
        try Self.buildVersionThree(fixture.source, into: fixture.dist)
        let update2 = try await fixture.odrfs(["update", fixture.mountpoint, "--json"])
        try #require(update2.status == 0, "\(update2.stderr)\n\(fixture.log)")
        let report2 = try MountUpdateTests.json(update2.stdout)
        #expect((report2["download_bytes"] as? Int).map { $0 < 3 * 65_536 + 1_048_576 } == true, "\(report2)")
        var same = try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(big)
        #expect(same, "big.bin differs after the version-3 update")

        // Revision 3, version 4: content-defined chunks match nothing of a version-3 index
        // (other digests), so the changed file comes by its unchanged chunks of the pack and
        // its own path's old bytes, as before blocks; what it reads is exact either way.
        big = Self.inserting(100, at: 500_000, into: big)
        try Data(big).write(to: URL(fileURLWithPath: fixture.source + "/big.bin"))
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        #expect(try Self.index(fixture.dist).version == 4)
        let update3 = try await fixture.odrfs(["update", fixture.mountpoint, "--json"])
        try #require(update3.status == 0, "\(update3.stderr)\n\(fixture.log)")
        same = try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(big)
        #expect(same, "big.bin differs after the version-4 update")
        for (path, bytes) in TestBundle.files where path != "big.bin" {
            let other = try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/" + path)) == Data(bytes)
            #expect(other, "\(path) differs")
        }
    }

    @Test("in a store, an update copies the chunks of a changed file from another bundle's pack: it fetches the few chunks no bundle has, and reads back exactly")
    func chunksComeFromAnotherBundleOfTheStore() async throws {
        let fixture = try MountFixture()
        let (store, second) = try await fixture.storeWorld()
        let big = try #require(TestBundle.files["big.bin"])
        // Bundle B: revision 1 has a small base file only; revision 2 adds to its base (always
        // local, so the update fetches it) a copy of A's big.bin with 100 bytes inserted.
        let sourceB = fixture.root + "/sourceB", distB = fixture.root + "/distB"
        try FileManager.default.createDirectory(atPath: sourceB, withIntermediateDirectories: true)
        try Data("b\n".utf8).write(to: URL(fileURLWithPath: sourceB + "/readme.txt"))
        try "tags: {}\n".write(toFile: sourceB + "/odr.yaml", atomically: true, encoding: .utf8)
        let buildB = try await fixture.odrfs(["build", sourceB, "-o", distB, "--bundle-id", "com.example.b"])
        try #require(buildB.status == 0, "\(buildB.stderr)")
        let serverA = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serveA-\($0)", port: $0) }
        let serverB = try await onFreePort { try await ServeOrigin(serving: distB, in: fixture.root + "/serveB-\($0)", port: $0) }
        try await fixture.mount(origin: serverA.url, store: store)
        try await fixture.mount(at: second, origin: serverB.url, store: store)
        // A's Big pack in the store.
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(big))

        let copy = Self.inserting(100, at: 1_000_000, into: big)
        try Data(copy).write(to: URL(fileURLWithPath: sourceB + "/copy.bin"))
        let rebuildB = try await fixture.odrfs(["build", sourceB, "-o", distB])
        try #require(rebuildB.status == 0, "\(rebuildB.stderr)")
        let manifestB = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: distB + "/manifest.json")))
        let base = manifestB.pack(PackNumber(0))
        let check = try MountUpdateTests.json(try await fixture.odrfs(["update", second, "--check", "--json"]).stdout)
        let reused = try #require(check["reused_bytes"] as? Int), planned = try #require(check["download_bytes"] as? Int)
        // All of copy.bin but the chunks around the insertion comes from bundle A's pack.
        #expect(reused >= big.count - 2 * 256 * 1024, "reused \(reused) bytes, planned \(planned)")
        #expect(planned <= 2 * 256 * 1024 + 16 * 1024, "planned \(planned) bytes")

        let before = MountUpdateTests.bytesServed(serverB.logText, file: base.file)
        let update = try await fixture.odrfs(["update", second, "--json"])
        try #require(update.status == 0, "\(update.stderr)\n\(fixture.log)")
        let served = MountUpdateTests.bytesServed(serverB.logText, file: base.file) - before
        #expect(served > 0 && served <= planned + 1024, "fetched \(served) bytes of B's \(base.compression?.bytes.value ?? base.bytes.value)-byte base pack")
        let readBack = try Data(contentsOf: URL(fileURLWithPath: second + "/copy.bin")) == Data(copy)
        #expect(readBack, "copy.bin differs from the source after the update")
        // And A, untouched, still reads its own file.
        #expect(try Data(contentsOf: URL(fileURLWithPath: fixture.mountpoint + "/big.bin")) == Data(big))
    }
}
