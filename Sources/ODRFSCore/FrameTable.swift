/// A compressed pack's frames, validated: maps a chunk index of the uncompressed pack to
/// the byte range of its frame in the compressed file and back, so a fetcher (or an
/// update that needs only some chunks) can ask the origin for exactly those frames.
///
/// Built from a ``PackDescriptor`` whose ``PackDescriptor/compression`` came from an
/// origin, so every number is checked before use: one frame per chunk, frames contiguous
/// from offset 0 and ending at the declared compressed size, every frame at least 1 byte
/// and at most ``maximumFrameLength(chunkSize:)``, every sum checked for overflow. After
/// that, the accessors need no checks.
public struct FrameTable: Sendable, Equatable {
    public let pack: PackID
    /// Size of the compressed file.
    public let compressedBytes: Int64
    /// Size of the uncompressed pack (the tar).
    public let uncompressedBytes: Int64
    public let chunkSize: Int64
    private let frames: [PackCompression.Frame]

    /// Validates `pack.compression` against the pack's size and chunk list; nil for a pack
    /// without compression.
    public init?(validating pack: PackDescriptor, chunkSize: ByteCount) throws(ManifestError) {
        guard let compression = pack.compression else { return nil }
        func refuse(_ kind: ManifestError.Kind, _ text: String) -> ManifestError {
            ManifestError(kind, "pack '\(pack.id)' compression: \(text)")
        }
        guard compression.format == PackCompression.zstd else {
            throw refuse(.unsupportedFormat, "format '\(compression.format)' is not supported (only '\(PackCompression.zstd)')")
        }
        guard BundleLimits.chunkSizeRange.contains(chunkSize) else {
            throw refuse(.invalidChunkSize, "chunk size \(chunkSize.value) is outside \(BundleLimits.chunkSizeRange)")
        }
        guard pack.bytes.value >= 0, pack.bytes <= BundleLimits.maxTotalBytes else {
            throw refuse(.invalidSize, "the pack's size \(pack.bytes.value) is outside 0...\(BundleLimits.maxTotalBytes.value)")
        }
        guard compression.bytes.value >= 0, compression.bytes <= BundleLimits.maxTotalBytes else {
            throw refuse(.invalidSize, "compressed size \(compression.bytes.value) is outside 0...\(BundleLimits.maxTotalBytes.value)")
        }
        // Both ≤ 2^52 and chunkSize ≥ 1: no overflow.
        let needed = (pack.bytes.value + chunkSize.value - 1) / chunkSize.value
        guard Int64(pack.chunks.count) == needed, compression.frames.count == pack.chunks.count else {
            throw refuse(.chunkCountMismatch, "\(compression.frames.count) frames and \(pack.chunks.count) chunk hashes for a pack of \(needed) chunks")
        }
        let maximum = Self.maximumFrameLength(chunkSize: chunkSize.value)
        var next: Int64 = 0
        for (number, frame) in compression.frames.enumerated() {
            guard frame.offset == next else {
                throw refuse(.inconsistent, "frame \(number) starts at \(frame.offset), expected \(next) (frames must be contiguous)")
            }
            guard (1...maximum).contains(frame.length) else {
                throw refuse(.invalidSize, "frame \(number) is \(frame.length) bytes; a frame of a \(chunkSize.value)-byte chunk is 1...\(maximum)")
            }
            let (end, overflow) = next.addingReportingOverflow(frame.length)
            guard !overflow, end <= compression.bytes.value else {
                throw refuse(.invalidSize, "frame \(number) ends past the compressed size \(compression.bytes.value)")
            }
            next = end
        }
        guard next == compression.bytes.value else {
            throw refuse(.invalidSize, "frames end at \(next) but the compressed size is \(compression.bytes.value)")
        }
        self.pack = pack.id
        self.compressedBytes = compression.bytes.value
        self.uncompressedBytes = pack.bytes.value
        self.chunkSize = chunkSize.value
        self.frames = compression.frames
    }

    /// The largest frame accepted for a chunk of `chunkSize` bytes: above libzstd's
    /// worst case (the chunk in raw blocks plus headers, about 1/256 more), and small
    /// enough that a frame held in memory while it arrives stays about one chunk.
    public static func maximumFrameLength(chunkSize: Int64) -> Int64 {
        chunkSize + chunkSize / 128 + 4096
    }

    /// Number of frames (= chunks).
    public var count: Int { frames.count }

    /// Where chunk `chunk`'s frame lies in the compressed file.
    public func compressedRange(ofChunk chunk: Int) -> Range<Int64> {
        frames[chunk].offset..<(frames[chunk].offset + frames[chunk].length)
    }

    /// Where chunk `chunk` lies in the uncompressed pack; the last chunk may be shorter.
    public func uncompressedRange(ofChunk chunk: Int) -> Range<Int64> {
        let start = Int64(chunk) * chunkSize
        return start..<min(start + chunkSize, uncompressedBytes)
    }

    /// The chunk whose frame starts at `offset` in the compressed file, if one does.
    public func chunk(startingAt offset: Int64) -> Int? {
        var low = 0
        var high = frames.count
        while low < high {
            let middle = (low + high) / 2
            if frames[middle].offset < offset { low = middle + 1 } else { high = middle }
        }
        return low < frames.count && frames[low].offset == offset ? low : nil
    }
}
