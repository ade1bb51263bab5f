import FaultOriginSupport
import Foundation
import ODRFSCompression
import ODRFSCore
import Testing
import TestSupport
@testable import ODRFSFetch

/// `PackSpanFetcher`, which fetches what an update lacks of a changed pack: for a
/// compressed pack only the frames of the chunks the spans touch (decoded, verified, and
/// written whole), and through a `MirrorSet` with range requests rather than whole files.
@Suite(.timeLimit(.minutes(1)))
struct PackSpanFetcherTests {
    static let chunkSize = CompressedPackTests.chunkSize

    /// What `write` got: offset → bytes.
    final class Written: Sendable {
        let writes = LockedValue<[Int64: [UInt8]]>([:])

        func write(_ offset: Int64, _ bytes: [UInt8]) {
            writes.withLock { $0[offset, default: []] += bytes }
        }
    }

    /// The plain tar descriptor of `content` (no compression).
    static func plain(_ content: [UInt8]) -> PackDescriptor {
        var hasher = ChunkHasher(chunkSize: chunkSize)
        hasher.update(content)
        let digests = hasher.finalize()
        return PackDescriptor(id: PackID("Level1"), tags: [Tag("Level1")], file: "packs/\(digests.sha256.hex).tar",
                              bytes: digests.bytes, sha256: digests.sha256, chunks: digests.chunks, files: 1)
    }

    /// Spans in chunks 1, 3 and 4 of a ten-chunk pack: two runs of frames (1, and 3–4).
    static let spans: [Range<Int64>] = [70_000..<70_100, 200_000..<200_010, 262_144..<262_200]

    @Test func aCompressedPackFetchesOnlyTheFramesOfTheChunksTouched() async throws {
        let content = CompressedPackTests.text(640_000)
        let (pack, file) = try CompressedPackTests.compressed(content)
        let table = try #require(try FrameTable(validating: pack, chunkSize: Self.chunkSize))
        // One frame per chunk here: frame runs are chunk runs.
        #expect(table.frameRuns(touching: Self.spans) == [1...1, 3...4])
        let expected = table.compressedBytes(ofFrameRuns: [1...1, 3...4])
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, file)
            try await withHTTPOrigin(server.baseURL) { origin in
                let written = Written()
                let fetched = try await PackSpanFetcher(origin: origin).fetch(pack, chunkSize: Self.chunkSize, spans: Self.spans) {
                    (offset: Int64, bytes: [UInt8]) async throws(FetchError) in written.write(offset, bytes)
                }
                #expect(fetched == expected)
                #expect(server.bytesSent(of: "/" + pack.file) == Int(expected), "only the needed frames cross the wire")
                let ranges = server.requests(of: "/" + pack.file).map { $0.range ?? "whole file" }
                let run1 = table.compressedRange(ofFrames: 1...1), run2 = table.compressedRange(ofFrames: 3...4)
                // Both runs of frames in one multi-range request.
                #expect(ranges == ["bytes=\(run1.lowerBound)-\(run1.upperBound - 1),\(run2.lowerBound)-\(run2.upperBound - 1)"])
                // Whole decoded chunks at their uncompressed offsets: exactly the pack's bytes there.
                let writes = written.writes.withLock { $0 }
                #expect(writes.keys.sorted() == [65_536, 196_608, 262_144])
                for (offset, bytes) in writes {
                    #expect(bytes == Array(content[Int(offset)..<Int(offset) + 65_536]), "chunk at \(offset)")
                }
                #expect(PackSpanFetcher.transferBytes(of: pack, chunkSize: Self.chunkSize, spans: Self.spans) == expected)
            }
        }
    }

    @Test func aFrameThatDoesNotVerifyIsAnErrorAndNeverWritten() async throws {
        let content = CompressedPackTests.text(640_000)
        // Frame 3 is a valid frame of other bytes of the right size: it decodes but does not verify.
        let (pack, file) = try CompressedPackTests.compressed(content) { number, frame in
            guard number == 3 else { return frame }
            let other = [UInt8](repeating: 0x41, count: 65_536)
            return (try? other.withUnsafeBytes { try ZstdFrame.compress($0, level: 3) }) ?? frame
        }
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, file)
            try await withHTTPOrigin(server.baseURL) { origin in
                let written = Written()
                let error = await #expect(throws: FetchError.self) {
                    try await PackSpanFetcher(origin: origin).fetch(pack, chunkSize: Self.chunkSize, spans: Self.spans) {
                        (offset: Int64, bytes: [UInt8]) async throws(FetchError) in written.write(offset, bytes)
                    }
                }
                #expect(error?.kind == .corrupt)
                #expect(error?.message.contains("chunk 3") == true, "\(error?.message ?? "")")
                #expect(written.writes.withLock { $0[196_608] } == nil, "the bad chunk was written")
            }
        }
    }

    @Test func throughAMirrorSetSpansAreFetchedWithOneMultiRangeRequest() async throws {
        let content = CompressedPackTests.text(640_000)
        let pack = Self.plain(content)
        try await withFaultOrigin { main in
            try await withFaultOrigin { mirror in
                // The main server lacks the file (a lagging mirror): the set moves on, still by range.
                mirror.setFile("/" + pack.file, content)
                let log = LogCapture()
                let set = MirrorSet([try HTTPOrigin(url: main.baseURL, logger: log.logger),
                                     try HTTPOrigin(url: mirror.baseURL, logger: log.logger)], logger: log.logger)
                do {
                    #expect(set.servesRanges)
                    let written = Written()
                    let spans: [Range<Int64>] = [1_000..<2_000, 300_000..<300_500]
                    let fetched = try await PackSpanFetcher(origin: set).fetch(pack, chunkSize: Self.chunkSize, spans: spans) {
                        (offset: Int64, bytes: [UInt8]) async throws(FetchError) in written.write(offset, bytes)
                    }
                    #expect(fetched == 1_500)
                    #expect(mirror.bytesSent(of: "/" + pack.file) == 1_500, "the whole file was read")
                    #expect(mirror.requests(of: "/" + pack.file).map(\.range) == ["bytes=1000-1999,300000-300499"])
                    let writes = written.writes.withLock { $0 }
                    #expect(writes[1_000] == Array(content[1_000..<2_000]))
                    #expect(writes[300_000] == Array(content[300_000..<300_500]))
                    // The conditional GET goes to a server too (a plain read would have no ETag).
                    mirror.setFile("/manifest.json", Array("{}".utf8))
                    guard case .modified(let data, let etag) = try await set.conditionalData(at: "manifest.json", limit: .kibibytes(4), etag: nil) else {
                        Issue.record("a first conditional GET is never 'not modified'")
                        await set.shutdown()
                        return
                    }
                    #expect(Array(data) == Array("{}".utf8))
                    #expect(etag == FaultOrigin.entityTag)
                } catch {
                    await set.shutdown()
                    throw error
                }
                await set.shutdown()
            }
        }
    }
}

extension PackSpanFetcherTests {
    @Test func moreThanSixtyFourGroupsTakeSeveralRequestsOfAtMostSixtyFour() async throws {
        let content = CompressedPackTests.text(640_000)
        let pack = Self.plain(content)
        // 130 spans further apart than the coalescing gap: 130 groups.
        let spans: [Range<Int64>] = (Int64(0)..<130).map { (index: Int64) -> Range<Int64> in
            let start: Int64 = index * 4_800
            return start..<(start + 10)
        }
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, content)
            try await withHTTPOrigin(server.baseURL) { origin in
                let written = Written()
                let fetched = try await PackSpanFetcher(origin: origin).fetch(pack, chunkSize: Self.chunkSize, spans: spans) {
                    (offset: Int64, bytes: [UInt8]) async throws(FetchError) in written.write(offset, bytes)
                }
                #expect(fetched == 1_300)
                let ranges = server.requests(of: "/" + pack.file).map { ($0.range ?? "").split(separator: ",").count }
                #expect(ranges == [64, 64, 2])
                let writes = written.writes.withLock { $0 }
                #expect(writes.count == 130)
                #expect(spans.allSatisfy { writes[$0.lowerBound] == Array(content[Int($0.lowerBound)..<Int($0.upperBound)]) })
            }
        }
    }
}
