import Foundation
import NIOCore
import ODRFSCompression
import ODRFSCore
import ODRFSRuntime

/// Turns one downloaded frame back into its chunk and proves it: decompressed into a
/// buffer of exactly the chunk's size (a frame that expands further is cut off there and
/// refused), then hashed and compared with the manifest's chunk hash. Only a chunk that
/// passes is returned, so nothing unverified is ever written where a reader could see it.
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

    /// Decodes and verifies `frame`; throws ``FetchError/Kind/corrupt`` naming the chunk.
    func decode(_ frame: FrameAssembler.Frame) throws(FetchError) -> [UInt8] {
        let range = table.uncompressedRange(ofChunk: frame.chunk)
        let content: [UInt8]
        do {
            content = try frame.bytes.withUnsafeBytes { bytes throws(ZstdError) in
                try ZstdFrame.decompress(bytes, contentSize: Int(range.count))
            }
        } catch {
            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(source) failed verification: frame \(frame.chunk) is refused: \(error)")
        }
        guard ContentHash.of(content) == pack.chunks[frame.chunk] else {
            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(source) failed verification: chunk \(frame.chunk) differs from the manifest")
        }
        return content
    }
}
