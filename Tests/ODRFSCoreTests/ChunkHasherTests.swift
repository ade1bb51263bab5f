import Crypto
import Testing
@testable import ODRFSCore

@Suite struct ChunkHasherTests {
    static func bytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) } }

    static func descriptor(for bytes: [UInt8], chunkSize: Int) -> PackDescriptor {
        let chunks = stride(from: 0, to: bytes.count, by: chunkSize).map {
            ContentHash.of(Array(bytes[$0..<min($0 + chunkSize, bytes.count)]))
        }
        return PackDescriptor(id: PackID("P"), tags: [Tag("P")], file: "packs/p.tar", bytes: ByteCount(Int64(bytes.count)),
                              sha256: ContentHash.of(bytes), chunks: chunks, files: 1)
    }

    @Test(arguments: [0, 1, 99, 100, 101, 1000])
    func chunksMatchSlicesWhateverTheFeedSize(_ count: Int) {
        let data = Self.bytes(count)
        let expected = Self.descriptor(for: data, chunkSize: 100)
        for feed in [1, 7, 100, 333] {
            var hasher = ChunkHasher(chunkSize: ByteCount(100))
            for start in stride(from: 0, to: data.count, by: feed) {
                hasher.update(Array(data[start..<min(start + feed, data.count)]))
            }
            let digests = hasher.finalize()
            #expect(digests.sha256 == expected.sha256)
            #expect(digests.chunks == expected.chunks)
            #expect(digests.bytes.value == Int64(count))
        }
    }

    @Test func verifierAcceptsExactBytes() throws {
        let data = Self.bytes(450)
        var verifier = PackVerifier(expected: Self.descriptor(for: data, chunkSize: 100), chunkSize: ByteCount(100))
        data.withUnsafeBytes { verifier.update($0) }
        try verifier.finish()
        #expect(verifier.firstMismatchedChunk == nil)
    }

    @Test func verifierReportsSizeMismatch() {
        let data = Self.bytes(450)
        var verifier = PackVerifier(expected: Self.descriptor(for: data, chunkSize: 100), chunkSize: ByteCount(100))
        data.dropLast().withUnsafeBytes { verifier.update($0) }
        #expect(throws: PackVerificationError(pack: PackID("P"), kind: .sizeMismatch(expected: ByteCount(450), actual: ByteCount(449)))) {
            try verifier.finish()
        }
    }

    @Test func verifierNamesFirstBadChunk() {
        let data = Self.bytes(450)
        var corrupt = data
        corrupt[250] ^= 0xFF
        corrupt[420] ^= 0xFF
        var verifier = PackVerifier(expected: Self.descriptor(for: data, chunkSize: 100), chunkSize: ByteCount(100))
        corrupt.withUnsafeBytes { verifier.update($0) }
        #expect(verifier.firstMismatchedChunk == 2)
        do {
            try verifier.finish()
            Issue.record("corrupt pack verified")
        } catch {
            guard case .chunkMismatch(let chunk) = error.kind else { Issue.record("wrong kind \(error)"); return }
            #expect(chunk == 2)
            #expect(error.description.contains("chunk 2"))
        }
    }

    /// Downloads hash every byte once, into its chunk; the chunk list then stands for the
    /// content (the whole-pack SHA-256 names the file and is not recomputed).
    @Test func verifierChecksChunksNotTheWholeDigest() throws {
        let data = Self.bytes(450)
        var descriptor = Self.descriptor(for: data, chunkSize: 100)
        let chunkOnly = ChunkHasher(chunkSize: ByteCount(100), wholeDigest: false)
        var both = ChunkHasher(chunkSize: ByteCount(100))
        var hasher = chunkOnly
        data.withUnsafeBytes { hasher.update($0); both.update($0) }
        #expect(hasher.finalizeChunks() == both.finalize().chunks)
        #expect(hasher.finalizeChunks() == descriptor.chunks)

        // A descriptor whose name disagrees with its chunks still verifies: which is why
        // the cache keys its trust on the chunk list (`chunkListDigest`), tested in the store.
        descriptor.sha256 = ContentHash.of([1, 2, 3])
        var verifier = PackVerifier(expected: descriptor, chunkSize: ByteCount(100))
        data.withUnsafeBytes { verifier.update($0) }
        try verifier.finish()

        // One chunk missing at the end is a size mismatch; a short chunk list is a chunk mismatch.
        var short = Self.descriptor(for: data, chunkSize: 100)
        short.chunks.removeLast()
        var shortVerifier = PackVerifier(expected: short, chunkSize: ByteCount(100))
        data.withUnsafeBytes { shortVerifier.update($0) }
        #expect(throws: PackVerificationError(pack: PackID("P"), kind: .chunkMismatch(chunk: 4))) { try shortVerifier.finish() }
    }

    @Test func chunkListDigestBindsSizeAndEveryChunk() {
        let data = Self.bytes(450)
        let descriptor = Self.descriptor(for: data, chunkSize: 100)
        var otherChunk = descriptor
        otherChunk.chunks[3] = ContentHash.of([9])
        var otherSize = descriptor
        otherSize.bytes = ByteCount(451)
        var otherName = descriptor
        otherName.sha256 = ContentHash.of([7])
        #expect(descriptor.chunkListDigest == Self.descriptor(for: data, chunkSize: 100).chunkListDigest)
        #expect(descriptor.chunkListDigest != otherChunk.chunkListDigest)
        #expect(descriptor.chunkListDigest != otherSize.chunkListDigest)
        #expect(descriptor.chunkListDigest == otherName.chunkListDigest)
    }
}
