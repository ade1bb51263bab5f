import Crypto

/// Computes, in one streaming pass, a file's SHA-256 and the SHA-256 of each `chunkSize` slice
/// of it: the builder fills pack descriptors with it and the fetcher verifies downloads with it
/// (through ``PackVerifier``, chunks only), without ever holding a whole pack in memory.
/// Not `Sendable`: swift-crypto's `SHA256` state is not; keep a hasher within one task.
public struct ChunkHasher {
    /// The result of hashing a whole stream.
    public struct Digests: Sendable, Equatable {
        public var sha256: ContentHash
        public var chunks: [ContentHash]
        public var bytes: ByteCount
    }

    public let chunkSize: Int64
    /// nil when only chunk hashes are wanted: hashing every byte twice costs a fifth of a
    /// download's CPU time.
    private var whole: SHA256?
    private var chunk = SHA256()
    private var inChunk: Int64 = 0
    /// Bytes seen so far.
    public private(set) var bytes: Int64 = 0
    /// Hashes of the chunks completed so far.
    public private(set) var chunks: [ContentHash] = []

    public init(chunkSize: ByteCount, wholeDigest: Bool = true) {
        precondition(chunkSize.value > 0, "chunk size must be positive")
        self.chunkSize = chunkSize.value
        self.whole = wholeDigest ? SHA256() : nil
    }

    public mutating func update(_ buffer: UnsafeRawBufferPointer) {
        whole?.update(bufferPointer: buffer)
        bytes += Int64(buffer.count)
        var rest = buffer[...]
        while !rest.isEmpty {
            let take = Int(min(Int64(rest.count), chunkSize - inChunk))
            chunk.update(bufferPointer: UnsafeRawBufferPointer(rebasing: rest.prefix(take)))
            inChunk += Int64(take)
            rest = rest.dropFirst(take)
            if inChunk == chunkSize {
                chunks.append(ContentHash(digest: chunk.finalize()))
                chunk = SHA256()
                inChunk = 0
            }
        }
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digests of everything seen; a trailing partial chunk counts as the last chunk.
    /// Only for a hasher made with `wholeDigest: true`.
    public func finalize() -> Digests {
        guard let whole else { preconditionFailure("finalize() needs a hasher made with wholeDigest: true") }
        return Digests(sha256: ContentHash(digest: whole.finalize()), chunks: finalizeChunks(), bytes: ByteCount(bytes))
    }

    /// The hash of every chunk seen; a trailing partial chunk counts as the last chunk.
    public func finalizeChunks() -> [ContentHash] {
        var chunks = self.chunks
        if inChunk > 0 { chunks.append(ContentHash(digest: chunk.finalize())) }
        return chunks
    }
}
