import Crypto

/// The parameters of content-defined chunking (FastCDC, normalized to level 1), as a
/// version-4 file index records them (see ``FileIndexLayout``): a large file is cut where a
/// rolling gear hash of its last 64 bytes has enough leading zero bits, so the boundaries
/// move with the content. An insertion or deletion changes the chunks around the edit and
/// leaves every later chunk with the same bytes and hash, however far its offset moved;
/// fixed blocks would change all of them.
///
/// The cut rule, for a chunk starting at byte s with the hash reset to 0 there: no cut in
/// its first `minimum` bytes; from then on, after byte i, `hash = (hash << 1) &+ gear[byte]`
/// (wrapping) and the chunk ends after byte i when the hash's top `log2(average) + 1` bits
/// are zero (before the chunk reaches `average` bytes) or its top `log2(average) − 1` bits
/// are (after), or when it reaches `maximum` bytes; the file's end ends the last chunk.
/// Chunks average about 77 KiB on random data. Why level 1: on 6 MiB of random bytes
/// (6 seeds), level 2 made a 1 MiB overwrite cost 255 KiB of chunks beyond the change,
/// level 1 137 KiB (a stricter mask before the average takes longer to fall back in step
/// with the old cuts after an edit), while an insertion cost about 100 KiB with either;
/// no normalization made an insertion cost 170 KiB (more long chunks).
/// `gear` is 256 values of SplitMix64 seeded with 0 (``ContentChunker/gear``). Readers never
/// chunk: the index lists each chunk's end and SHA-256, so a later release may change these
/// parameters without breaking an index, only chunk reuse between the two.
public struct ContentChunking: Sendable, Equatable, CustomStringConvertible {
    /// No chunk is cut shorter (except a file's last).
    public var minimum: UInt32
    /// The target average, a power of two.
    public var average: UInt32
    /// No chunk is longer.
    public var maximum: UInt32

    /// What `odrfs build` uses: 16 KiB, 64 KiB, 256 KiB.
    public static let standard = ContentChunking(minimum: 16 << 10, average: 64 << 10, maximum: 256 << 10)

    /// The range every parameter must lie in (a reader refuses others).
    public static let bounds: ClosedRange<UInt32> = 1024...(16 << 20)

    public init(minimum: UInt32, average: UInt32, maximum: UInt32) {
        self.minimum = minimum
        self.average = average
        self.maximum = maximum
    }

    /// Whether a chunker may run with these parameters: each in ``bounds``, minimum ≤
    /// average ≤ maximum with minimum < maximum (the chunker tests the maximum after each
    /// hashed byte, and hashes none before the minimum), the average a power of two of at
    /// least 2^10 (so both masks have bits).
    public var isValid: Bool {
        Self.bounds.contains(minimum) && Self.bounds.contains(average) && Self.bounds.contains(maximum)
            && minimum <= average && average <= maximum && minimum < maximum && average.nonzeroBitCount == 1
    }

    public var description: String { "FastCDC \(minimum)/\(average)/\(maximum)" }
}

/// Cuts a stream into content-defined chunks (``ContentChunking``) as it goes by, hashing
/// each chunk with SHA-256 in place: `odrfs build` feeds it every large file it packs, for
/// the index's chunk table. Memory is constant: no byte is copied or held. Not `Sendable`
/// (its SHA-256 state is not): one file's state, kept by the loop that reads it.
public struct ContentChunker {
    /// One chunk: where it ends in the stream and its SHA-256.
    public struct Chunk: Sendable, Equatable {
        public var end: UInt64
        public var digest: ChunkDigest
    }

    public let parameters: ContentChunking
    private let minimum: UInt64, average: UInt64, maximum: UInt64
    private let strictMask: UInt64, looseMask: UInt64
    private var hash: UInt64 = 0
    private var length: UInt64 = 0
    private var offset: UInt64 = 0
    private var hasher = SHA256()
    public private(set) var chunks: [Chunk] = []

    /// `parameters` must be valid (``ContentChunking/isValid``); invalid ones are replaced by
    /// ``ContentChunking/standard``.
    public init(_ parameters: ContentChunking = .standard) {
        let p = parameters.isValid ? parameters : .standard
        self.parameters = p
        (minimum, average, maximum) = (UInt64(p.minimum), UInt64(p.average), UInt64(p.maximum))
        let bits = UInt64(p.average.trailingZeroBitCount)
        // The top bits of the hash depend on the last 64 bytes; the low ones on only a few.
        strictMask = ~UInt64(0) << (64 - (bits + 1))
        looseMask = ~UInt64(0) << (64 - (bits - 1))
    }

    /// The gear table: SplitMix64 from seed 0, 256 values.
    public static let gear: [UInt64] = {
        var state: UInt64 = 0
        return (0..<256).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }()

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
        let count = bytes.count
        var start = 0
        var i = 0
        Self.gear.withUnsafeBufferPointer { gear in
            while i < count {
                // Skip what cannot hold a cut: the rest of the minimum, unhashed.
                if length < minimum {
                    let skip = Int(min(minimum - length, UInt64(count - i)))
                    i += skip
                    length += UInt64(skip)
                    continue
                }
                var h = hash
                var n = length
                var cut = false
                while i < count {
                    h = (h << 1) &+ gear[Int(base[i])]
                    i += 1
                    n += 1
                    if h & (n < average ? strictMask : looseMask) == 0 || n >= maximum {
                        cut = true
                        break
                    }
                }
                hash = h
                length = n
                if cut {
                    hasher.update(bufferPointer: UnsafeRawBufferPointer(start: base + start, count: i - start))
                    endChunk()
                    start = i
                }
            }
        }
        if start < count { hasher.update(bufferPointer: UnsafeRawBufferPointer(start: base + start, count: count - start)) }
    }

    private mutating func endChunk() {
        offset += length
        chunks.append(Chunk(end: offset, digest: ChunkDigest(sha256: hasher.finalize())))
        hasher = SHA256()
        hash = 0
        length = 0
    }

    /// Every chunk, the last one ended by the end of the stream; empty for an empty stream.
    public mutating func finalize() -> [Chunk] {
        if length > 0 { endChunk() }
        return chunks
    }
}
