import Foundation
import NIOCore
import ODRFSCompression
import ODRFSCore
import ODRFSRuntime

/// Turns downloaded frames back into the chunks of the pack and proves them: each frame is
/// decompressed into a buffer of exactly its uncompressed size (a frame that expands further
/// is cut off there and refused), the frames of a chunk are joined, and the chunk is hashed
/// and compared with the manifest's chunk hash. Only a chunk that passes is returned, so
/// nothing unverified is ever written where a reader could see it.
///
/// Where it runs: on ``executor``, a pool of its own with one thread per core, never on
/// Swift's cooperative pool (decoding and hashing a 1 MiB chunk is a millisecond or two of
/// CPU; done there, a fast download would hold the pool's few threads that FUSE replies and
/// control requests need) and never on the cache's I/O executor (whose threads also serve
/// splice replies: a burst of decoding must not delay reads of local packs). Frames of one
/// pack are decoded one after the other, in order, so memory stays about one chunk per
/// download.
struct FrameDecoder: Sendable {
    /// One thread per core: decoding is pure CPU and never blocks.
    static let executor = IOExecutor(name: "odrfs-decode", threads: max(1, System.coreCount))

    let pack: PackDescriptor
    let table: FrameTable
    let source: String

    /// A verified chunk: its number and bytes.
    struct Chunk: Sendable {
        var chunk: Int
        var bytes: [UInt8]
    }

    /// The chunk being joined from its frames (frames of one chunk arrive in order).
    struct PartialChunk: Sendable {
        /// The chunk being joined; -1 when none is.
        fileprivate(set) var chunk = -1
        /// Its frames decoded so far, unverified, from the chunk's first byte.
        fileprivate(set) var bytes: [UInt8] = []
    }

    /// Decodes one frame into exactly its uncompressed size, unverified.
    func decompress(_ frame: FrameAssembler.Frame) throws(FetchError) -> [UInt8] {
        let range = table.uncompressedRange(ofFrame: frame.frame)
        do {
            return try frame.bytes.withUnsafeBytes { bytes throws(ZstdError) in
                try ZstdFrame.decompress(bytes, contentSize: Int(range.count))
            }
        } catch {
            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(source) failed verification: frame \(frame.frame) is refused: \(error)")
        }
    }

    /// Decodes `frames` (consecutive, starting at the first frame of a chunk or continuing
    /// `partial`), joins them into chunks and returns the chunks they complete, each
    /// verified; the frames of a chunk not yet complete stay in `partial`. Throws
    /// ``FetchError/Kind/corrupt`` naming the frame or chunk.
    func decode(_ frames: [FrameAssembler.Frame], partial: inout PartialChunk) throws(FetchError) -> [Chunk] {
        var chunks: [Chunk] = []
        for frame in frames {
            let content = try decompress(frame)
            let chunk = table.chunk(ofFrame: frame.frame)
            let run = table.frames(ofChunk: chunk)
            if frame.frame == run.lowerBound {
                // A chunk left half joined means frames were skipped: never silently dropped.
                guard partial.bytes.isEmpty else {
                    throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(source): frame \(frame.frame) starts chunk \(chunk) while chunk \(partial.chunk) is incomplete")
                }
                partial = PartialChunk(chunk: chunk, bytes: [])
            } else if partial.chunk != chunk {
                throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(source): frame \(frame.frame) arrived without the frames of chunk \(chunk) before it")
            }
            let whole: [UInt8]
            if run.count == 1 {
                whole = content
            } else {
                if partial.bytes.isEmpty { partial.bytes.reserveCapacity(Int(table.uncompressedRange(ofChunk: chunk).count)) }
                partial.bytes.append(contentsOf: content)
                guard frame.frame == run.upperBound - 1 else { continue }
                whole = partial.bytes
            }
            partial = PartialChunk()
            guard ContentHash.of(whole) == pack.chunks[chunk] else {
                throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(source) failed verification: chunk \(chunk) differs from the manifest")
            }
            chunks.append(Chunk(chunk: chunk, bytes: whole))
        }
        return chunks
    }
}
