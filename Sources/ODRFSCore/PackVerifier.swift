/// Checks a pack's bytes against its manifest descriptor while they stream in, so that a reader
/// never sees an unverified byte. Chunks are compared as soon as they complete: a fetcher can
/// look at ``firstMismatchedChunk`` to stop a corrupt download early.
///
/// Verification is by chunk: every byte is hashed once, into its chunk's SHA-256, and the
/// pack is right when its size and every chunk hash match. That proves the bytes are the
/// ones the builder hashed into this descriptor; the whole-pack `sha256` (the file's name)
/// was computed from the same bytes by `odrfs build`. A hostile manifest could pair one
/// pack's `sha256` with another content's chunks, so the cache records which chunk list a
/// file was verified against (``PackDescriptor/chunkListDigest``) and trusts it only for
/// descriptors with that same list.
public struct PackVerifier {
    public let expected: PackDescriptor
    private var hasher: ChunkHasher
    /// The first chunk whose hash differed from the descriptor's, if any so far.
    public private(set) var firstMismatchedChunk: Int?

    public init(expected: PackDescriptor, chunkSize: ByteCount) {
        self.expected = expected
        self.hasher = ChunkHasher(chunkSize: chunkSize, wholeDigest: false)
    }

    /// Bytes received so far.
    public var bytesReceived: ByteCount { ByteCount(hasher.bytes) }

    /// The leading bytes already proven right: every complete chunk before the first
    /// mismatch. A reader may see these before the whole pack is in (progressive open);
    /// the last, partial chunk is proven only by `finish()`.
    public var verifiedPrefix: ByteCount {
        let verifiedChunks = min(firstMismatchedChunk ?? hasher.chunks.count, hasher.chunks.count, expected.chunks.count)
        // The descriptor may not come from a validated manifest: never trap on its numbers.
        let (bytes, overflow) = Int64(verifiedChunks).multipliedReportingOverflow(by: hasher.chunkSize)
        return ByteCount(overflow ? expected.bytes.value : min(bytes, expected.bytes.value))
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
        guard hasher.bytes == expected.bytes.value else {
            throw PackVerificationError(pack: expected.id, kind: .sizeMismatch(expected: expected.bytes, actual: ByteCount(hasher.bytes)))
        }
        let chunks = hasher.finalizeChunks()
        guard chunks == expected.chunks else {
            let firstBad = zip(chunks, expected.chunks).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            throw PackVerificationError(pack: expected.id, kind: .chunkMismatch(chunk: firstBad ?? min(chunks.count, expected.chunks.count)))
        }
    }
}

/// A downloaded or cached pack whose bytes are not the ones the manifest promises.
public struct PackVerificationError: Error, CustomStringConvertible, Equatable {
    public enum Kind: Sendable, Equatable {
        case sizeMismatch(expected: ByteCount, actual: ByteCount)
        /// The first chunk whose SHA-256 differs from the descriptor's.
        case chunkMismatch(chunk: Int)
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
        case let .chunkMismatch(chunk):
            return "pack '\(pack)' differs from the manifest, first at chunk \(chunk)"
        }
    }
}
