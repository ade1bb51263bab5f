import NIOCore
import ODRFSCore

/// Cuts the byte stream of a compressed pack into its frames, as the ``FrameTable`` says,
/// whatever sizes the network delivers it in: holds the bytes of the one frame still
/// arriving (at most ``FrameTable/maximumFrameLength(chunkSize:)``) and hands back each
/// frame once it is whole. Not `Sendable`: one download's state, kept in its task.
struct FrameAssembler {
    /// A whole frame and its number.
    struct Frame: Sendable {
        var frame: Int
        var bytes: [UInt8]
    }

    let table: FrameTable
    /// The frame arriving; `table.frameCount` when all have arrived.
    private(set) var nextFrame = 0
    private var pending: [UInt8] = []

    /// An assembler for the stream from the first byte of frame `frame` on: a download
    /// that resumes after the chunks before it were verified, or a range request for some
    /// frames (an update).
    init(table: FrameTable, startingAt frame: Int = 0) {
        self.table = table
        self.nextFrame = min(max(0, frame), table.frameCount)
    }

    /// Every frame has arrived.
    var isComplete: Bool { nextFrame == table.frameCount }

    /// Compressed bytes taken so far: the offset the stream has reached.
    var offset: Int64 {
        nextFrame < table.frameCount ? table.compressedRange(ofFrame: nextFrame).lowerBound + Int64(pending.count) : table.compressedBytes
    }

    /// Where the stream has reached in uncompressed terms: the bytes of the frames taken,
    /// plus the received share of the frame arriving (an estimate for progress reports).
    var estimatedUncompressedOffset: Int64 {
        guard nextFrame < table.frameCount else { return table.uncompressedBytes }
        let chunk = table.uncompressedRange(ofFrame: nextFrame)
        let frame = table.compressedRange(ofFrame: nextFrame)
        // Both factors are bounded by the validated chunk and frame sizes (≤ ~2^30): no overflow.
        return chunk.lowerBound + Int64(pending.count) * Int64(chunk.count) / Int64(frame.count)
    }

    /// Takes the next bytes of the stream; returns the frames they complete, in order.
    /// Bytes past the last frame are refused (the origin already holds a download to the
    /// declared size, so this only guards the arithmetic).
    mutating func append(_ buffer: ByteBuffer) throws(FetchError) -> [Frame] {
        var rest = buffer.readableBytesView[...]
        var complete: [Frame] = []
        while !rest.isEmpty {
            guard nextFrame < table.frameCount else {
                throw FetchError(.corrupt, "pack '\(table.pack)': more bytes than its \(table.frameCount) frames")
            }
            let range = table.compressedRange(ofFrame: nextFrame)
            // A validated frame length fits in memory and in an Int.
            let missing = Int(range.count) - pending.count
            let take = min(missing, rest.count)
            if pending.isEmpty && take == missing {
                complete.append(Frame(frame: nextFrame, bytes: Array(rest.prefix(take))))
            } else {
                if pending.isEmpty { pending.reserveCapacity(Int(range.count)) }
                pending.append(contentsOf: rest.prefix(take))
                if pending.count == Int(range.count) {
                    complete.append(Frame(frame: nextFrame, bytes: pending))
                    pending = []
                }
            }
            rest = rest.dropFirst(take)
            if complete.last?.frame == nextFrame { nextFrame += 1 }
        }
        return complete
    }
}
