import Crypto
import FaultOriginSupport
import Foundation
import ODRFSCompression
import ODRFSCore
import Synchronization
import Testing
import TestSupport
@testable import ODRFSFetch

/// Issue 27, item 4: a large file's bytes are released as each of the index's chunks
/// verifies, not after a whole manifest chunk; a range far ahead of the stream is fetched by
/// `Range` while the pack keeps streaming, and released only once proven.
@Suite(.timeLimit(.minutes(1)))
struct ChunkReleaseTests {
    /// Polls `condition` every 10 ms until it holds or `timeout` passes.
    static func eventually(_ timeout: Duration, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    static let manifestChunk: Int64 = 256 * 1024
    static let indexChunk: Int64 = 32 * 1024

    /// An index chunk map cutting `content` every `indexChunk` bytes, with full SHA-256 digests.
    static func chunkMap(_ content: [UInt8], every size: Int64 = indexChunk) -> PackChunkMap {
        let chunks = stride(from: Int64(0), to: Int64(content.count), by: Int(size)).map { start in
            let end = min(start + size, Int64(content.count))
            return PackChunkMap.Chunk(range: start..<end, digest: ChunkDigest(sha256: SHA256.hash(data: content[Int(start)..<Int(end)])))
        }
        return PackChunkMap(chunks: chunks, packBytes: Int64(content.count))
    }

    /// `content` as a compressed pack of 256 KiB manifest chunks, each cut into frames that
    /// follow the index's 32 KiB chunks (as a default build cuts a large file's frames).
    static func compressedFollowingChunks(_ content: [UInt8]) throws -> (PackDescriptor, [UInt8]) {
        var hasher = ChunkHasher(chunkSize: ByteCount(manifestChunk))
        hasher.update(content)
        let digests = hasher.finalize()
        var file: [UInt8] = []
        var frames: [PackCompression.Frame] = []
        for start in stride(from: 0, to: content.count, by: Int(indexChunk)) {
            let piece = Array(content[start..<min(start + Int(indexChunk), content.count)])
            let frame = try piece.withUnsafeBytes { try ZstdFrame.compress($0, level: 3) }
            frames.append(PackCompression.Frame(offset: Int64(file.count), length: Int64(frame.count), size: Int64(piece.count)))
            file += frame
        }
        let pack = PackDescriptor(id: PackID("Big"), tags: [Tag("Big")], file: "packs/\(digests.sha256.hex).tar.zst",
                                  bytes: digests.bytes, sha256: digests.sha256, chunks: digests.chunks, files: 1,
                                  compression: PackCompression(bytes: ByteCount(Int64(file.count)), frames: frames))
        return (pack, file)
    }

    static func plain(_ content: [UInt8]) -> PackDescriptor {
        var hasher = ChunkHasher(chunkSize: ByteCount(manifestChunk))
        hasher.update(content)
        let digests = hasher.finalize()
        return PackDescriptor(id: PackID("Big"), tags: [Tag("Big")], file: "packs/\(digests.sha256.hex).tar",
                              bytes: digests.bytes, sha256: digests.sha256, chunks: digests.chunks, files: 1)
    }

    static func withPipeline(_ server: FaultOrigin, _ body: (PackPipeline<RecordingSink>, RecordingSink) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        let sink = RecordingSink(directory: directory.path)
        try await withHTTPOrigin(server.baseURL) { origin in
            try await body(PackPipeline(origin: origin, sink: sink, chunkSize: ByteCount(manifestChunk), logger: LogCapture().logger), sink)
        }
    }

    /// The bytes the sink's file holds at `range`.
    static func bytes(of file: RecordingSink.File, _ range: Range<Int64>) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: Int(range.count))
        let count = buffer.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, $0.count, off_t(range.lowerBound)) }
        return Array(buffer.prefix(max(0, count)))
    }

    static func covered(_ ranges: [Range<Int64>], _ wanted: Range<Int64>) -> Bool {
        var position = wanted.lowerBound
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where range.lowerBound <= position && range.upperBound > position {
            position = range.upperBound
        }
        return position >= wanted.upperBound
    }

    @Test("compressed: the first index chunks are released as their frames verify, long before the first manifest chunk is whole")
    func compressedReleasesEachChunk() async throws {
        let content = testBytes(700_000, seed: 41)
        let (pack, file) = try Self.compressedFollowingChunks(content)
        let map = Self.chunkMap(content)
        // Random bytes: each frame is its chunk plus a few bytes. Stop inside the third frame.
        let third = try #require(pack.compression?.frames[2])
        let gate = FaultGate()
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, file)
            server.script("/" + pack.file, [.pause(after: Int(third.offset + third.length / 2), gate: gate)])
            try await Self.withPipeline(server) { pipeline, sink in
                let download = Task { try await pipeline.fetch(pack, chunkMap: map) }
                let released = await Self.eventually(.seconds(10)) {
                    guard let made = sink.made.withLock({ $0.first }) else { return false }
                    return Self.covered(made.aheadReleases.withLock { $0 }, 0..<(2 * Self.indexChunk))
                }
                #expect(released, "the first two 32 KiB chunks were not released while the rest of their 256 KiB chunk was held")
                let made = try #require(sink.made.withLock { $0.first })
                #expect(made.releases.withLock { $0 }.allSatisfy { $0 == 0 }, "the prefix moved before its manifest chunk was whole")
                #expect(!Self.covered(made.aheadReleases.withLock { $0 }, 0..<(3 * Self.indexChunk)), "a chunk was released before it arrived")
                #expect(Self.bytes(of: made, 0..<(2 * Self.indexChunk)) == Array(content[0..<Int(2 * Self.indexChunk)]))
                gate.open()
                _ = try await download.value
                #expect(sink.published.withLock { $0 }.first?.1 == content)
            }
        }
    }

    @Test("plain: index chunks are released as they arrive and match; a chunk whose digest lies is left to the manifest chunk")
    func plainReleasesEachChunk() async throws {
        let content = testBytes(600_000, seed: 42)
        let pack = Self.plain(content)
        // The second index chunk's digest is wrong (a hostile index would be refused before
        // this; here it shows the digest alone never releases bytes that do not match it).
        var chunks = Self.chunkMap(content).chunks
        chunks[1].digest = ChunkDigest(sha256: SHA256.hash(data: [1, 2, 3]))
        let map = PackChunkMap(chunks: chunks, packBytes: Int64(content.count))
        let gate = FaultGate()
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, content)
            server.script("/" + pack.file, [.pause(after: 110_000, gate: gate)])
            try await Self.withPipeline(server) { pipeline, sink in
                let download = Task { try await pipeline.fetch(pack, chunkMap: map) }
                let released = await Self.eventually(.seconds(10)) {
                    guard let made = sink.made.withLock({ $0.first }) else { return false }
                    return Self.covered(made.aheadReleases.withLock { $0 }, (2 * Self.indexChunk)..<(3 * Self.indexChunk))
                }
                #expect(released, "the third 32 KiB chunk was not released")
                let made = try #require(sink.made.withLock { $0.first })
                let ahead = made.aheadReleases.withLock { $0 }
                #expect(Self.covered(ahead, 0..<Self.indexChunk))
                #expect(!ahead.contains { $0.overlaps(Self.indexChunk..<(2 * Self.indexChunk)) }, "bytes were released by a digest they do not match")
                #expect(!ahead.contains { $0.upperBound > 110_000 }, "bytes not yet received were released")
                gate.open()
                _ = try await download.value
                #expect(sink.published.withLock { $0 }.first?.1 == content)
            }
        }
    }

    @Test("a range far ahead of a held stream is fetched by Range, proven and released; the pack still publishes whole", arguments: [true, false])
    func demandedRangeIsServedAlongside(compressed: Bool) async throws {
        do {
            let content = testBytes(1_500_000, seed: 43)
            let (pack, file) = compressed ? try Self.compressedFollowingChunks(content) : (Self.plain(content), content)
            let map = Self.chunkMap(content)
            let gate = FaultGate()
            try await withFaultOrigin { server in
                server.setFile("/" + pack.file, file)
                server.script("/" + pack.file, [.pause(after: 1000, gate: gate)])
                try await Self.withPipeline(server) { pipeline, sink in
                    let demands = SpanDemands()
                    let download = Task { try await pipeline.fetch(pack, chunkMap: map, demands: demands) }
                    // The last 64 KiB of the "file", as an engine reads a central directory.
                    let tail = Int64(content.count - 65_536)..<Int64(content.count)
                    #expect(demands.request(tail))
                    #expect(!demands.request(tail), "a pending range was asked for twice")
                    let released = await Self.eventually(.seconds(10)) {
                        guard let made = sink.made.withLock({ $0.first }) else { return false }
                        return Self.covered(made.aheadReleases.withLock { $0 }, tail)
                    }
                    #expect(released, "compressed \(compressed): the demanded range was not released while the stream was held")
                    let made = try #require(sink.made.withLock { $0.first })
                    #expect(Self.bytes(of: made, tail) == Array(content[Int(tail.lowerBound)...]))
                    #expect(server.requests(of: "/" + pack.file).contains { $0.range != nil && !$0.range!.hasPrefix("bytes=0-") },
                            "no range request for the demanded bytes")
                    gate.open()
                    _ = try await download.value
                    #expect(sink.published.withLock { $0 }.first?.1 == content, "compressed \(compressed)")
                }
            }
        }
    }

    @Test("ranges readers wait for are served before speculative ones, of which at most 4 wait")
    func readsGoBeforeSpeculativeRanges() {
        let demands = SpanDemands()
        for k in 0..<6 { demands.request(Int64(k * 1000)..<Int64(k * 1000 + 10), speculative: true) }
        #expect(demands.request(50_000..<50_100))
        #expect(!demands.request(50_010..<50_020), "a range inside a pending one was asked again")
        #expect(demands.next() == 50_000..<50_100, "a read waited behind speculative ranges")
        let rest = [demands.next(), demands.next(), demands.next(), demands.next(), demands.next()]
        #expect(rest == [0..<10, 1000..<1010, 2000..<2010, 3000..<3010, nil], "speculative ranges past the fourth are kept")
        #expect(!demands.request(0..<5), "a range being served was asked again")
        demands.served(0..<10)
        #expect(demands.request(0..<5))
    }

    @Test("proving demanded bytes: a tampered index chunk or manifest chunk is dropped, the others kept")
    func proofDropsTamperedChunks() throws {
        let content = testBytes(600_000, seed: 44)
        let pack = Self.plain(content)
        let map = Self.chunkMap(content)
        typealias Pipeline = PackPipeline<RecordingSink>
        // Index chunks 8-11 (256-384 KiB) and the whole manifest chunk 1 (256-512 KiB).
        var run = Array(content[262_144..<524_288])
        run[40_000] ^= 1   // inside index chunk 9 (294,912..<327,680) and manifest chunk 1
        let proven = Pipeline.prove([(262_144, run)], of: pack, chunkMap: map, chunkSize: Self.manifestChunk)
        let ranges = proven.map { $0.0..<($0.0 + Int64($0.1.count)) }
        #expect(!ranges.contains { $0.contains(262_144 + 40_000) }, "a tampered byte was proven")
        #expect(ranges.contains(262_144..<294_912) && ranges.contains(327_680..<360_448))
        for (offset, bytes) in proven { #expect(bytes == Array(content[Int(offset)..<(Int(offset) + bytes.count)])) }
        // Untampered, the manifest chunk itself is proven too.
        let whole = Pipeline.prove([(262_144, Array(content[262_144..<524_288]))], of: pack, chunkMap: .empty, chunkSize: Self.manifestChunk)
        #expect(whole.count == 1 && whole.first?.0 == 262_144 && whole.first?.1.count == 262_144)
    }

    @Test("the spans fetched for a range: the index chunks overlapping it, whole manifest chunks where none covers it")
    func provableSpans() {
        typealias Pipeline = PackPipeline<RecordingSink>
        let map = PackChunkMap(chunks: [
            .init(range: 300_000..<340_000, digest: ChunkDigest(sha256: SHA256.hash(data: [0]))),
            .init(range: 340_000..<400_000, digest: ChunkDigest(sha256: SHA256.hash(data: [1]))),
        ], packBytes: 1_000_000)
        let chunk = Self.manifestChunk
        // Inside the large file: its chunks only.
        #expect(Pipeline.provableSpans(of: 310_000..<350_000, chunkMap: map, chunkSize: chunk, packBytes: 1_000_000) == [300_000..<400_000])
        // Past it: the manifest chunks holding the bytes (the last one short at the pack's end).
        #expect(Pipeline.provableSpans(of: 900_000..<2_000_000, chunkMap: map, chunkSize: chunk, packBytes: 1_000_000) == [786_432..<1_000_000])
        // Straddling: bytes before the file are proven only by whole manifest chunks (here
        // the first two: 250,000-300,000 crosses 262,144), merged with the file's chunks.
        #expect(Pipeline.provableSpans(of: 250_000..<320_000, chunkMap: map, chunkSize: chunk, packBytes: 1_000_000) == [0..<524_288])
        #expect(Pipeline.provableSpans(of: 100_000..<320_000, chunkMap: map, chunkSize: 131_072, packBytes: 1_000_000) == [0..<393_216])
        #expect(Pipeline.provableSpans(of: 2_000_000..<3_000_000, chunkMap: map, chunkSize: chunk, packBytes: 1_000_000).isEmpty)
        #expect(Pipeline.provableSpans(of: Int64.max - 10..<Int64.max, chunkMap: map, chunkSize: chunk, packBytes: Int64.max).count == 1)
    }
}
