import Foundation
import ODRFSCore
import Testing
import TestSupport

/// Compressed packs (the default of `odrfs build`) through a real mount, and the plain tar
/// dist dirs built before compression existed.
@Suite("Compressed packs", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct CompressedMountTests {
    /// Every file of the test bundle read through the mount, compared byte for byte;
    /// returns the paths that differ or fail. On a thread of its own: blocking reads.
    static func mismatches(in fixture: MountFixture, skipping skipped: @escaping @Sendable (String) -> Bool = { _ in false }) async -> [String] {
        let mountpoint = fixture.mountpoint
        return await onDedicatedThread {
            TestBundle.files.keys.sorted().filter { !skipped($0) }.filter { path in
                FileManager.default.contents(atPath: mountpoint + "/" + path).map(Array.init) != TestBundle.files[path]
            }
        }
    }

    @Test("a compressed bundle mounts and reads back byte-identical; a corrupt frame is EIO with one log line while other packs still read")
    func compressedBundle() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let manifest = try fixture.manifest
        #expect(manifest.packs.allSatisfy { $0.compression != nil && $0.file.hasSuffix(".tar.zst") })
        let listing = try await Command.run("/bin/tar", ["--zstd", "-tvf", fixture.dist + "/packs/" + fixture.distFileName(of: "Big")])
        #expect(listing.status == 0 && listing.output.contains("big.bin"), "\(listing.stderr)")

        // Level2's second frame damaged on the origin: its pack can never verify.
        let level2 = try #require(manifest.packs.first { $0.id.rawValue == "Level2" })
        let table = try #require(try FrameTable(validating: level2, chunkSize: manifest.chunkSize))
        let path = fixture.dist + "/" + level2.file
        var damaged = try Data(contentsOf: URL(fileURLWithPath: path))
        let target = table.count > 1 ? 1 : 0
        damaged[Int(table.compressedRange(ofChunk: target).lowerBound) + 30] ^= 0x40
        try damaged.write(to: URL(fileURLWithPath: path))

        try await fixture.mount()
        let corrupt = try await Command.run("/bin/cat", [fixture.mountpoint + "/levels/2/map.dat"])
        #expect(corrupt.status != 0 && corrupt.stderr.contains("Input/output error"), "\(corrupt.stderr)")
        #expect(corrupt.stdout.isEmpty, "bytes of an unverified pack were served")
        let failures = fixture.log.split(separator: "\n").filter { $0.contains("pack fetch failed") }
        #expect(failures.count == 1, "\(failures)")
        #expect(failures.first?.contains("Level2") == true, "\(failures)")

        // Every other file, from every other pack, reads back exactly.
        let wrong = await Self.mismatches(in: fixture) { $0.hasPrefix("levels/2/") }
        #expect(wrong.isEmpty, "differ: \(wrong)")
        #expect(try fixture.fetches(of: "Big") == 1, "the multi-frame pack was fetched once")
        #expect(try fixture.state(of: "Level2") == "not-downloaded")
    }

    @Test("a dist dir of plain tar packs (--compress none, today's format) still mounts and reads back byte-identical")
    func plainTarDistDir() async throws {
        let fixture = try MountFixture()
        try TestBundle.write(to: fixture.source)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist, "--compress", "none"])
        #expect(build.status == 0, "\(build.stderr)")
        let text = try String(contentsOfFile: fixture.dist + "/manifest.json", encoding: .utf8)
        #expect(!text.contains("compression") && !text.contains(".tar.zst"))
        try await fixture.mount()
        let wrong = await Self.mismatches(in: fixture)
        #expect(wrong.isEmpty, "differ: \(wrong)")
        #expect(fixture.cachedPackFiles.count == (try fixture.manifest.packs.count))
    }

    @Test("--chunk-size 64K: frames of 64 KiB, every file reads back byte-identical; sizes outside 16K…64M are refused")
    func smallChunks() async throws {
        let fixture = try MountFixture()
        try TestBundle.write(to: fixture.source)
        for size in ["8K", "128M", "lots"] {
            let refused = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist, "--chunk-size", size])
            #expect(refused.status != 0, "--chunk-size \(size) was accepted")
        }
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist, "--chunk-size", "64K"])
        try #require(build.status == 0, "\(build.stderr)")
        let manifest = try fixture.manifest
        #expect(manifest.chunkSize == ByteCount.kibibytes(64))
        let big = try #require(manifest.packs.first { $0.id.rawValue == "Big" })
        #expect(big.chunks.count == Int((big.bytes.value + 65_535) / 65_536))
        // A frame per chunk at least; more where big.bin's content-defined chunks cut them.
        let table = try #require(try FrameTable(validating: big, chunkSize: manifest.chunkSize))
        #expect(table.count == big.chunks.count && table.frameCount >= big.chunks.count)
        try await fixture.mount()
        let wrong = await Self.mismatches(in: fixture)
        #expect(wrong.isEmpty, "differ: \(wrong)")
    }
}
