/// Checks a pack's bytes against its manifest descriptor while they stream in, so that a reader
/// never sees an unverified byte. Chunks are compared as soon as they complete: a fetcher can
/// look at ``firstMismatchedChunk`` to stop a corrupt download early.
public struct PackVerifier {
    public let expected: PackDescriptor
    private var hasher: ChunkHasher
    /// The first chunk whose hash differed from the descriptor's, if any so far.
    public private(set) var firstMismatchedChunk: Int?

    public init(expected: PackDescriptor, chunkSize: ByteCount) {
        self.expected = expected
        self.hasher = ChunkHasher(chunkSize: chunkSize)
    }

    /// Bytes received so far.
    public var bytesReceived: ByteCount { ByteCount(hasher.bytes) }

    /// The leading bytes already proven right: every complete chunk before the first
    /// mismatch. A reader may see these before the whole pack is in (progressive open);
    /// the last, partial chunk is proven only by `finish()`.
    public var verifiedPrefix: ByteCount {
        let verifiedChunks = min(firstMismatchedChunk ?? hasher.chunks.count, hasher.chunks.count, expected.chunks.count)
        return ByteCount(min(Int64(verifiedChunks) * hasher.chunkSize, expected.bytes.value))
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        let before = hasher.chunks.count
        hasher.update(bytes)
        if firstMismatchedChunk == nil {
            for index in before..<hasher.chunks.count
            where index >= expected.chunks.count || hasher.chunks[index] != expected.chunks[index] {
                firstMismatchedChunk = index
                break
            }
        }
    }

    /// Throws unless the bytes received are exactly the pack the descriptor describes.
    public func finish() throws(PackVerificationError) {
        let digests = hasher.finalize()
        guard digests.bytes == expected.bytes else {
            throw PackVerificationError(pack: expected.id, kind: .sizeMismatch(expected: expected.bytes, actual: digests.bytes))
        }
        guard digests.sha256 == expected.sha256 else {
            let firstBad = zip(digests.chunks, expected.chunks).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            throw PackVerificationError(pack: expected.id,
                                        kind: .hashMismatch(expected: expected.sha256, actual: digests.sha256, firstBadChunk: firstBad))
        }
    }
}

/// A downloaded or cached pack whose bytes are not the ones the manifest promises.
public struct PackVerificationError: Error, CustomStringConvertible, Equatable {
    public enum Kind: Sendable, Equatable {
        case sizeMismatch(expected: ByteCount, actual: ByteCount)
        /// `firstBadChunk` is nil when every chunk matched but the whole hash did not (only
        /// possible if the descriptor itself is inconsistent).
        case hashMismatch(expected: ContentHash, actual: ContentHash, firstBadChunk: Int?)
    }

    public let pack: PackID
    public let kind: Kind

    public init(pack: PackID, kind: Kind) {
        self.pack = pack
        self.kind = kind
    }

    public var description: String {
        switch kind {
        case let .sizeMismatch(expected, actual):
            return "pack '\(pack)' is \(actual.value) bytes but the manifest says \(expected.value)"
        case let .hashMismatch(expected, actual, firstBadChunk):
            let chunk = firstBadChunk.map { ", first differing at chunk \($0)" } ?? ""
            return "pack '\(pack)' has SHA-256 \(actual) but the manifest says \(expected)\(chunk)"
        }
    }
}
