import FaultOriginSupport
import Foundation
import ODRFSCompression
import ODRFSCore
import ODRFSStore
import Testing
import TestSupport
@testable import ODRFSFetch

/// Compressed packs through `PackDownloader`: frames are decoded and verified before any
/// byte reaches the cache, hostile frames are refused, and a dropped connection resumes
/// without fetching a verified frame again.
@Suite(.timeLimit(.minutes(1)))
struct CompressedPackTests {
    static let chunkSize = ByteCount.kibibytes(64)

    /// Compressible bytes (text with a counter) of `count` bytes.
    static func text(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        var line = 0
        while bytes.count < count {
            bytes += Array("line \(line): the quick brown fox jumps over the lazy dog\n".utf8)
            line += 1
        }
        return Array(bytes.prefix(count))
    }

    /// The descriptor of `content` and its compressed file, one frame per 64 KiB chunk.
    /// `frame` may replace a chunk's frame (a hostile origin's frame).
    static func compressed(_ content: [UInt8], frame replace: (Int, [UInt8]) -> [UInt8] = { $1 }) throws -> (PackDescriptor, [UInt8]) {
        var hasher = ChunkHasher(chunkSize: chunkSize)
        hasher.update(content)
        let digests = hasher.finalize()
        var file: [UInt8] = []
        var frames: [PackCompression.Frame] = []
        for (number, start) in stride(from: 0, to: content.count, by: Int(chunkSize.value)).enumerated() {
            let chunk = content[start..<min(start + Int(chunkSize.value), content.count)]
            let frame = replace(number, try Array(chunk).withUnsafeBytes { try ZstdFrame.compress($0, level: 3) })
            frames.append(PackCompression.Frame(offset: Int64(file.count), length: Int64(frame.count)))
            file += frame
        }
        let pack = PackDescriptor(id: PackID("Level1"), tags: [Tag("Level1")], file: "packs/\(digests.sha256.hex).tar.zst",
                                  bytes: digests.bytes, sha256: digests.sha256, chunks: digests.chunks, files: 1,
                                  compression: PackCompression(bytes: ByteCount(Int64(file.count)), frames: frames))
        return (pack, file)
    }

    static func withDownloader(_ server: FaultOrigin, _ body: (PackDownloader, PackStore) async throws -> Void) async throws {
        try await PackDownloaderHTTPTests.withStore { store in
            try await withHTTPOrigin(server.baseURL) { origin in
                try await body(PackDownloader(origin: origin, store: store, chunkSize: chunkSize, logger: LogCapture().logger), store)
            }
        }
    }

    @Test func framesAreDecodedVerifiedAndCachedUncompressed() async throws {
        let content = Self.text(300_000)
        let (pack, file) = try Self.compressed(content)
        #expect(file.count < content.count / 3)
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, file)
            try await Self.withDownloader(server) { downloader, store in
                let reports = LockedValue<[PackDownloader.Progress]>([])
                try await downloader.fetch(pack, progress: { progress in reports.withLock { $0.append(progress) } })
                #expect(try Array(Data(contentsOf: URL(fileURLWithPath: store.layout.path(of: pack)))) == content)
                #expect(downloader.wire.bytes == Int64(file.count), "status counts the bytes that travelled")
                let last = try #require(reports.withLock { $0.last })
                #expect(last.received == pack.bytes, "progress is in uncompressed bytes")
                #expect(last.wireBytes.value == Int64(file.count))
                // Verified prefixes grow chunk by chunk, never past what was proven; the
                // trailing partial chunk is released when the pack is published, as for a tar.
                let verified = reports.withLock { $0.map(\.verified.value) }
                #expect(verified == verified.sorted())
                #expect(Set(verified).subtracting([0]).sorted() == [65_536, 131_072, 196_608, 262_144])
                let received = reports.withLock { $0.map(\.received.value) }
                #expect(received == received.sorted() && received.allSatisfy { $0 <= pack.bytes.value })
            }
        }
    }

    @Test func aDroppedConnectionResumesWithoutRefetchingVerifiedFrames() async throws {
        let (pack, file) = try Self.compressed(Self.text(400_000))
        let table = try #require(try FrameTable(validating: pack, chunkSize: Self.chunkSize))
        // Drop in the middle of frame 3: frames 0–2 are verified by then.
        let cut = Int(table.compressedRange(ofChunk: 3).lowerBound) + 40
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, file)
            server.script("/" + pack.file, [.reset(after: cut)])
            try await Self.withDownloader(server) { downloader, store in
                try await downloader.fetch(pack)
                #expect(store.contains(pack))
                let requests = server.requests(of: "/" + pack.file)
                #expect(requests.count == 2)
                // The origin sent `cut` bytes, then the rest from there: every byte once.
                #expect(requests.last?.range == "bytes=\(cut)-", "\(requests.map { $0.range ?? "-" })")
                #expect(downloader.wire.bytes == Int64(file.count))
            }
        }
    }

    @Test func aCorruptFrameFailsTheDownloadAndIsNeverPublished() async throws {
        let content = Self.text(200_000)
        let (pack, good) = try Self.compressed(content)
        let table = try #require(try FrameTable(validating: pack, chunkSize: Self.chunkSize))
        var bad = good
        bad[Int(table.compressedRange(ofChunk: 1).lowerBound) + 20] ^= 0x5A
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, bad)
            try await Self.withDownloader(server) { downloader, store in
                let error = await #expect(throws: FetchError.self) { try await downloader.fetch(pack) }
                #expect(error?.kind == .corrupt)
                #expect(error?.message.contains("frame 1") == true || error?.message.contains("chunk 1") == true, "\(error?.message ?? "")")
                #expect(!store.contains(pack))
                #expect(!FileManager.default.fileExists(atPath: store.layout.path(of: pack)))
            }
        }
    }

    @Test func aFrameThatExpandsPastItsChunkIsRefused() async throws {
        // Frame 1 is a valid frame of 4 MiB of zeros: a bomb in place of a 64 KiB chunk,
        // small enough on the wire to pass the frame table's length bound.
        let zeros = [UInt8](repeating: 0, count: 4 << 20)
        let bomb = try zeros.withUnsafeBytes { try ZstdFrame.compress($0, level: 3) }
        let (pack, file) = try Self.compressed(Self.text(200_000)) { number, frame in number == 1 ? bomb : frame }
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, file)
            try await Self.withDownloader(server) { downloader, store in
                let error = await #expect(throws: FetchError.self) { try await downloader.fetch(pack) }
                #expect(error?.kind == .corrupt)
                #expect(error?.message.contains("frame 1 is refused") == true, "\(error?.message ?? "")")
                #expect(!store.contains(pack))
            }
        }
    }
}

/// The decoder wrapper alone, on hostile frames.
@Suite struct ZstdFrameTests {
    @Test func aBombIsCutOffAtTheDeclaredSize() throws {
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        let frame = try zeros.withUnsafeBytes { try ZstdFrame.compress($0, level: 1) }
        let declared = #expect(throws: ZstdError.self) {
            try frame.withUnsafeBytes { try ZstdFrame.decompress($0, contentSize: 4096) }
        }
        #expect(declared?.kind == .tooLarge)
        // The same frame without its content size in the header (as streaming writers make
        // it): only the bounded output buffer stops it.
        let unsized = try #require(Self.withoutContentSize(frame), "libzstd wrote an unexpected frame header")
        let expanded = #expect(throws: ZstdError.self) {
            try unsized.withUnsafeBytes { try ZstdFrame.decompress($0, contentSize: 4096) }
        }
        #expect(expanded?.kind == .tooLarge, "\(String(describing: expanded))")
        #expect(try unsized.withUnsafeBytes { try ZstdFrame.decompress($0, contentSize: 1 << 20) } == zeros)
    }

    @Test func garbageTruncationAndTrailingBytesAreRefused() throws {
        let content = Array("hello, frames ".utf8) + [UInt8](repeating: 7, count: 5000)
        let frame = try content.withUnsafeBytes { try ZstdFrame.compress($0, level: 3) }
        for (name, input) in [("empty", []), ("garbage", Array("not zstd at all".utf8)), ("truncated", Array(frame.dropLast(3))),
                              ("two frames", frame + frame), ("trailing byte", frame + [0])] {
            let error = #expect(throws: ZstdError.self, "\(name)") {
                try input.withUnsafeBytes { try ZstdFrame.decompress($0, contentSize: content.count) }
            }
            #expect(error?.kind == .corrupt, "\(name): \(String(describing: error))")
        }
        let short = #expect(throws: ZstdError.self) {
            try frame.withUnsafeBytes { try ZstdFrame.decompress($0, contentSize: content.count + 1) }
        }
        #expect(short?.kind == .tooLarge || short?.kind == .sizeMismatch)
    }

    /// Rewrites a frame header so that it no longer records the content size: magic (4),
    /// descriptor (1: FCS flag in bits 7–6, single segment in bit 5, no dictionary id), a
    /// window descriptor unless single segment, then the content size field, dropped here.
    static func withoutContentSize(_ frame: [UInt8]) -> [UInt8]? {
        let descriptor = frame[4]
        guard descriptor & 0x03 == 0 else { return nil }
        let singleSegment = descriptor & 0x20 != 0
        let sizeBytes = [singleSegment ? 1 : 0, 2, 4, 8][Int(descriptor >> 6)]
        guard sizeBytes > 0 else { return nil }
        // Single segment frames have no window descriptor: give them one of 1 MiB (2^(10+10)).
        let window: [UInt8] = singleSegment ? [10 << 3] : [frame[5]]
        let rest = 5 + (singleSegment ? 0 : 1) + sizeBytes
        return Array(frame[0..<4]) + [descriptor & 0x1C] + window + Array(frame[rest...])
    }
}
