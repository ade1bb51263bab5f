import Foundation
import FaultOriginSupport
import ODRFSCore
import TestSupport
import Testing

/// Issue 27, item 4, through a real mount: a large file's first page is served once its
/// first content-defined chunk verifies, not its first 1 MiB; and the end of a large file,
/// read while the pack's stream is held near its start, is fetched by `Range` and served,
/// as an engine reads the central directory of every `.pk3` it opens.
@Suite("A first byte after one chunk, at any offset", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct ProgressiveChunkMountTests {
    static let hugeSize = 24 << 20

    /// The test bundle with big.bin grown to 24 MiB of random bytes, built with the defaults
    /// (zstd packs, frames that follow the large file's chunks).
    static func build(_ fixture: MountFixture) async throws -> [UInt8] {
        try TestBundle.write(to: fixture.source)
        let huge = TestBundle.pseudoRandom(hugeSize, seed: 2_027)
        try Data(huge).write(to: URL(fileURLWithPath: fixture.source + "/big.bin"))
        let result = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(result.status == 0, "\(result.stderr)")
        return huge
    }

    @Test("with the stream held inside the first 1 MiB chunk, big.bin's first page is served; its last 64 KiB come by Range; the pack then publishes whole")
    func firstChunkThenTheEndByRange() async throws {
        let fixture = try MountFixture()
        let huge = try await Self.build(fixture)
        let manifest = try fixture.manifest
        let pack = try #require(manifest.packs.first { $0.id.rawValue == "Big" })
        let table = try #require(try FrameTable(validating: pack, chunkSize: manifest.chunkSize))
        let index = try FileIndex(contentsOf: fixture.dist + "/" + manifest.index.file)
        let entry = try #require(index.lookup(path: "big.bin"))
        let offset = try #require(index.entry(entry)).packOffset
        let chunks = try #require(index.chunks(of: entry))
        // Hold the stream right after the frames holding big.bin's first two chunks, well
        // inside the frames of the pack's first 1 MiB chunk.
        let twoChunksEnd = offset + chunks[1].offset + chunks[1].length
        let frame = table.frame(containing: twoChunksEnd - 1)
        let held = table.compressedRange(ofFrame: frame).upperBound
        let firstChunkEnd = table.compressedRange(ofChunk: 0).upperBound
        try #require(held < firstChunkEnd, "the frames do not follow big.bin's chunks")

        try await withFaultOrigin(serving: fixture.dist) { origin in
            let gate = FaultGate()
            defer { gate.open() }
            origin.scriptStreams("/" + pack.file, [.pause(after: Int(held), gate: gate)])
            try await fixture.mount(origin: origin.baseURL)
            let path = fixture.mountpoint + "/big.bin"
            // Well under the 10 s after which a stalled transfer is resumed by a new request
            // (which this origin would serve): only a release per chunk answers in time.
            let first = await finishes(within: .seconds(6)) { () -> Data? in
                guard let file = try? await HeldFile.open(path) else { return nil }
                defer { file.close() }
                return await file.read(upTo: 4096)
            }
            #expect(first == Data(huge.prefix(4096)), "the first page waited for the whole first 1 MiB chunk")
            // The cold open already asked for the file's end (archives are read from there).
            let asked = await eventually(timeout: .seconds(5)) {
                origin.requests(of: "/" + pack.file).contains { $0.range.map { !$0.hasSuffix("-") } ?? false }
            }
            #expect(asked, "the cold open of a large file did not ask for its last bytes")
            let tail = await finishes(within: .seconds(6)) { () -> Data? in
                guard let file = try? await HeldFile.open(path) else { return nil }
                defer { file.close() }
                return await file.read(at: Int64(Self.hugeSize - 65_536), count: 65_536)
            }
            #expect(tail == Data(huge.suffix(65_536)), "the last 64 KiB waited for the stream")
            let ranged = origin.requests(of: "/" + pack.file).filter { $0.range.map { !$0.hasSuffix("-") } ?? false }
            #expect(!ranged.isEmpty, "no range request fetched the end of big.bin")
            // A read that jumps into the middle of the file (12 MiB) while the stream is still
            // held: fetched by range at the read, not by the open.
            let middle = Int64(12 << 20)
            let inside = await finishes(within: .seconds(6)) { () -> Data? in
                guard let file = try? await HeldFile.open(path) else { return nil }
                defer { file.close() }
                return await file.read(at: middle, count: 131_072)
            }
            #expect(inside == Data(huge[Int(middle)..<(Int(middle) + 131_072)]), "a read in the middle waited for the stream")
            // The held stream goes on; every byte of the file reads back and the pack publishes.
            gate.open()
            #expect(await readThroughMount(path) == Data(huge))
            _ = try await fixture.waitUntilCached("Big")
            let sent = origin.bytesSent(of: "/" + pack.file)
            let compressed = Int(table.compressedBytes)
            #expect(sent <= compressed + compressed / 4, "sent \(sent) bytes of a \(compressed)-byte pack")
        }
        #expect(try await fixture.unmount().status == 0)
    }

    @Test("with the stream held before big.bin's first byte, its open returns once its last 64 KiB arrive by range; its start waits for the stream")
    func openReturnsOnceTheEndIsProven() async throws {
        let fixture = try MountFixture()
        let huge = try await Self.build(fixture)
        let pack = try #require(try fixture.manifest.packs.first { $0.id.rawValue == "Big" })
        try await withFaultOrigin(serving: fixture.dist) { origin in
            let gate = FaultGate()
            defer { gate.open() }
            origin.scriptStreams("/" + pack.file, [.pause(after: 0, gate: gate)])
            // A 20 s read timeout: the held stream is not cut and resumed within this test's
            // waits, however loaded the machine.
            try await fixture.mount(origin: origin.baseURL, extra: ["--fetch-timeout", "60"])
            let path = fixture.mountpoint + "/big.bin"
            // Well under the 10 s after which a stalled stream is resumed by a new request.
            let held = await finishes(within: .seconds(6)) { try? await HeldFile.open(path) }
            let file = try #require(held ?? nil, "the open waited for the stream's first bytes, not for whichever end was proven first")
            defer { file.close() }
            let tail = await finishes(within: .seconds(6)) { await file.read(at: Int64(Self.hugeSize - 65_536), count: 65_536) }
            #expect(tail == Data(huge.suffix(65_536)))
            // The start is not proven: a read of it waits for the stream.
            let early = await finishes(within: .milliseconds(500)) { await file.read(at: 0, count: 4096) }
            #expect(early == nil, "the file's first page was served before the stream brought it")
            gate.open()
            #expect(await file.read(at: 0, count: 4096) == Data(huge.prefix(4096)))
            #expect(await readThroughMount(path) == Data(huge))
        }
        #expect(try await fixture.unmount().status == 0)
    }
}
