/// A compressed pack's frames, validated: maps the chunks and byte ranges of the
/// uncompressed pack to the frames holding them in the compressed file and back, so a
/// fetcher (or an update that needs only some bytes) can ask the origin for exactly those
/// frames.
///
/// Built from a ``PackDescriptor`` whose ``PackDescriptor/compression`` came from an
/// origin, so every number is checked before use: frames contiguous from offset 0 and
/// ending at the declared compressed size; either one frame per chunk (no sizes) or sizes on
/// every frame that add up to the pack with no frame crossing a chunk boundary; every frame
/// at least 1 byte and at most ``maximumFrameLength(chunkSize:)`` of its uncompressed size;
/// every sum checked for overflow. After that, the accessors need no checks.
public struct FrameTable: Sendable, Equatable {
    public let pack: PackID
    /// Size of the compressed file.
    public let compressedBytes: Int64
    /// Size of the uncompressed pack (the tar).
    public let uncompressedBytes: Int64
    public let chunkSize: Int64
    private let frames: [PackCompression.Frame]
    /// Where each frame starts in the uncompressed pack, plus the pack's size at the end.
    private let starts: [Int64]
    /// The first frame of each chunk, plus the frame count at the end.
    private let chunkFrames: [Int]

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
        let size = chunkSize.value
        let needed = (pack.bytes.value + size - 1) / size
        let sized = compression.frames.first?.size != nil
        guard Int64(pack.chunks.count) == needed, sized ? compression.frames.count >= pack.chunks.count : compression.frames.count == pack.chunks.count else {
            throw refuse(.chunkCountMismatch, "\(compression.frames.count) frames and \(pack.chunks.count) chunk hashes for a pack of \(needed) chunks")
        }
        var starts: [Int64] = []
        var chunkFrames: [Int] = []
        starts.reserveCapacity(compression.frames.count + 1)
        chunkFrames.reserveCapacity(pack.chunks.count + 1)
        var next: Int64 = 0
        var position: Int64 = 0
        for (number, frame) in compression.frames.enumerated() {
            guard frame.offset == next else {
                throw refuse(.inconsistent, "frame \(number) starts at \(frame.offset), expected \(next) (frames must be contiguous)")
            }
            // The frame's uncompressed bytes: its size, or its chunk.
            let frameSize: Int64
            if sized {
                guard let declared = frame.size, declared >= 1, declared <= size else {
                    throw refuse(.invalidSize, "frame \(number) has size \(frame.size.map { "\($0)" } ?? "none"); with sizes, every frame has one in 1...\(size)")
                }
                // position < pack bytes ≤ 2^52 here, declared ≤ 2^30: no overflow.
                guard position / size == (position + declared - 1) / size, position + declared <= pack.bytes.value else {
                    throw refuse(.inconsistent, "frame \(number) (\(declared) bytes at \(position)) crosses a chunk boundary or the end of the pack")
                }
                frameSize = declared
            } else {
                guard frame.size == nil else {
                    throw refuse(.inconsistent, "frame \(number) has a size but the first frame has none")
                }
                frameSize = min(size, pack.bytes.value - position)
            }
            let maximum = Self.maximumFrameLength(chunkSize: frameSize)
            guard (1...maximum).contains(frame.length) else {
                throw refuse(.invalidSize, "frame \(number) is \(frame.length) bytes; a frame of \(frameSize) bytes is 1...\(maximum)")
            }
            let (end, overflow) = next.addingReportingOverflow(frame.length)
            guard !overflow, end <= compression.bytes.value else {
                throw refuse(.invalidSize, "frame \(number) ends past the compressed size \(compression.bytes.value)")
            }
            if position % size == 0 { chunkFrames.append(number) }
            starts.append(position)
            position += frameSize
            next = end
        }
        guard next == compression.bytes.value else {
            throw refuse(.invalidSize, "frames end at \(next) but the compressed size is \(compression.bytes.value)")
        }
        guard position == pack.bytes.value, chunkFrames.count == pack.chunks.count else {
            throw refuse(.inconsistent, "frames hold \(position) bytes in \(chunkFrames.count) chunks; the pack is \(pack.bytes.value) bytes in \(pack.chunks.count)")
        }
        starts.append(position)
        chunkFrames.append(compression.frames.count)
        self.pack = pack.id
        self.compressedBytes = compression.bytes.value
        self.uncompressedBytes = pack.bytes.value
        self.chunkSize = size
        self.frames = compression.frames
        self.starts = starts
        self.chunkFrames = chunkFrames
    }

    /// The largest frame accepted for `chunkSize` uncompressed bytes: above libzstd's
    /// worst case (`ZSTD_compressBound`, at most 1/256 more plus 64 bytes, and an 18-byte
    /// frame header), and small enough that a frame held in memory while it arrives stays
    /// about one chunk, and that a manifest of many tiny frames cannot make a download much
    /// larger than its pack (a fixed slack of kilobytes per frame would, a thousandfold).
    public static func maximumFrameLength(chunkSize: Int64) -> Int64 {
        chunkSize + chunkSize / 128 + 256
    }

    /// Number of chunks.
    public var count: Int { chunkFrames.count - 1 }

    /// Number of frames: the chunks', or more when chunks are cut into several frames.
    public var frameCount: Int { frames.count }

    /// Where frame `frame` lies in the compressed file.
    public func compressedRange(ofFrame frame: Int) -> Range<Int64> {
        frames[frame].offset..<(frames[frame].offset + frames[frame].length)
    }

    /// Where frame `frame` lies in the uncompressed pack.
    public func uncompressedRange(ofFrame frame: Int) -> Range<Int64> {
        starts[frame]..<starts[frame + 1]
    }

    /// The chunk frame `frame` belongs to.
    public func chunk(ofFrame frame: Int) -> Int {
        Int(starts[frame] / chunkSize)
    }

    /// The frames of chunk `chunk`.
    public func frames(ofChunk chunk: Int) -> Range<Int> {
        chunkFrames[chunk]..<chunkFrames[chunk + 1]
    }

    /// Where chunk `chunk`'s frames lie in the compressed file.
    public func compressedRange(ofChunk chunk: Int) -> Range<Int64> {
        let run = frames(ofChunk: chunk)
        return compressedRange(ofFrame: run.lowerBound).lowerBound..<compressedRange(ofFrame: run.upperBound - 1).upperBound
    }

    /// Where chunk `chunk` lies in the uncompressed pack; the last chunk may be shorter.
    public func uncompressedRange(ofChunk chunk: Int) -> Range<Int64> {
        let start = Int64(chunk) * chunkSize
        return start..<min(start + chunkSize, uncompressedBytes)
    }

    /// The frame holding byte `offset` of the uncompressed pack (which must be inside it).
    public func frame(containing offset: Int64) -> Int {
        var low = 0, high = frames.count
        while low < high {
            let middle = (low + high) / 2
            if starts[middle + 1] <= offset { low = middle + 1 } else { high = middle }
        }
        return min(low, frames.count - 1)
    }

    /// The chunk whose first frame starts at `offset` in the compressed file, if one does.
    public func chunk(startingAt offset: Int64) -> Int? {
        var low = 0
        var high = frames.count
        while low < high {
            let middle = (low + high) / 2
            if frames[middle].offset < offset { low = middle + 1 } else { high = middle }
        }
        guard low < frames.count, frames[low].offset == offset, starts[low] % chunkSize == 0 else { return nil }
        return Int(starts[low] / chunkSize)
    }
}
