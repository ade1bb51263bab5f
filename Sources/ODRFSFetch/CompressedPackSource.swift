import Foundation
import NIOCore
import ODRFSCore
import ODRFSRuntime

/// A compressed pack (`packs/<sha256>.tar.zst`): streams the frames, decodes and verifies
/// each one as soon as it is whole (``FrameDecoder``, off the cooperative pool), and
/// writes only verified, uncompressed chunks — so the file is the one an uncompressed
/// download would have made, and reads, progressive open and purge accounting do not know
/// the pack travelled compressed.
///
/// A large file's bytes are released sooner: frames follow its content-defined chunks, so
/// as soon as the frames holding one of the file index's chunks are decoded, that chunk is
/// checked against its digest (``PackChunkMap``) and, if it matches, written and released
/// ahead of the prefix — a first byte after one 64 KiB chunk, not one 1 MiB manifest chunk.
/// The whole manifest chunk is still verified before the prefix moves past it. Only proven
/// bytes are ever written, at their own offsets, so a range fetched ahead of the stream
/// (``PackPipeline``'s demands) and the stream never disagree about a byte.
///
/// Resume: when a connection drops, the origin resumes the transfer at the first byte not
/// yet received (a Range request); the frame arriving then is held in memory, so no frame
/// already verified — nor any byte of the one in progress — is fetched again. A frame
/// that does not decode or expands past its size, or a chunk that differs from its chunk
/// hash, fails the attempt as corrupt; another server may then send the rest from the first
/// frame of the first chunk not written.
public struct CompressedPackSource: PackSource {
    let pack: PackDescriptor
    let table: FrameTable
    let decoder: FrameDecoder
    let source: String
    let chunkMap: PackChunkMap
    private var assembler: FrameAssembler
    private var received: Int64 = 0
    private var verified: Int64 = 0
    private var reported: Int64?
    /// Chunks decoded, verified and written: where a download resumes after bad bytes.
    private var writtenChunks = 0
    /// The frames of the chunk arriving, decoded but not yet verified.
    private var partial = FrameDecoder.PartialChunk()
    /// The file index's chunks are considered up to here: released, or left to the manifest.
    private var releasedThrough: Int64 = 0

    public init(pack: PackDescriptor, table: FrameTable, source: String, chunkMap: PackChunkMap = .empty) {
        (self.pack, self.table, self.source, self.chunkMap) = (pack, table, source, chunkMap)
        self.decoder = FrameDecoder(pack: pack, table: table, source: source)
        self.assembler = FrameAssembler(table: table)
    }

    public var label: String { "pack" }
    public var readableSize: Int64? { pack.bytes.value }

    public mutating func attempt<File: DownloadSinkFile>(into file: File, through transfer: PackTransfer<File>) async throws(FetchError) {
        let (pack, table, decoder, chunkMap) = (self.pack, self.table, self.decoder, self.chunkMap)
        try await transfer.origin.download(pack.file, from: assembler.offset, expectedBytes: ByteCount(table.compressedBytes)) { (bytes: ByteBuffer) async throws(FetchError) in
            try await transfer.received(bytes.readableBytes)
            received += Int64(bytes.readableBytes)
            let frames = try assembler.append(bytes)
            var chunks: [FrameDecoder.Chunk] = []
            var ahead: [(Int64, [UInt8])] = []
            if !frames.isEmpty {
                let (start, released) = (partial, releasedThrough)
                let (decoded, next, proven, through) = try await FrameDecoder.executor.run { () throws(FetchError) -> ([FrameDecoder.Chunk], FrameDecoder.PartialChunk, [(Int64, [UInt8])], Int64) in
                    var joining = start
                    let chunks = try decoder.decode(frames, partial: &joining)
                    // The index's chunks wholly inside the frames decoded of the chunk still
                    // joining, not yet considered: proven ones are released now.
                    guard !chunkMap.isEmpty, joining.chunk >= 0, !joining.bytes.isEmpty else { return (chunks, joining, [], released) }
                    let chunkStart = table.uncompressedRange(ofChunk: joining.chunk).lowerBound
                    let from = max(released, chunkStart)
                    let skip = Int(min(from - chunkStart, Int64(joining.bytes.count)))
                    let (pieces, through) = joining.bytes.withUnsafeBytes { raw in
                        chunkMap.verifiedPieces(of: UnsafeRawBufferPointer(rebasing: raw[skip...]), at: chunkStart + Int64(skip))
                    }
                    return (chunks, joining, pieces, max(released, through))
                }
                (chunks, partial, ahead, releasedThrough) = (decoded, next, proven, through)
            }
            for chunk in chunks {
                // Chunks arrive in order from the first not written: anything else would put
                // verified bytes at the wrong offset.
                guard chunk.chunk == writtenChunks else {
                    throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(source): chunk \(chunk.chunk) arrived where chunk \(writtenChunks) belongs")
                }
                let content = chunk.bytes
                let range = table.uncompressedRange(ofChunk: chunk.chunk)
                // As for a plain tar: a trailing partial chunk is released to readers only
                // when the pack is published, so a reader that got its bytes sees the pack
                // local (the caller marks the file complete then).
                verified = range.count == table.chunkSize ? range.upperBound : verified
                reported = range.upperBound
                let count = PackProgressCount(received: range.upperBound, verified: verified, wire: received)
                try await transfer.append(to: file, report: count) { (file) throws(FetchError) in
                    try file.writeVerified(content, at: range.lowerBound, release: false)
                }
                writtenChunks = chunk.chunk + 1
                releasedThrough = max(releasedThrough, range.upperBound)
            }
            try await transfer.writeAhead(to: file, ahead)
            // Between frames, progress in uncompressed units is estimated from the share of
            // the current frame received (status, progress bars): reported on the first
            // bytes and then at most every quarter chunk; nothing is released.
            let estimate = assembler.estimatedUncompressedOffset
            if chunks.isEmpty, reported.map({ estimate - $0 >= table.chunkSize / 4 }) ?? true {
                reported = estimate
                let count = PackProgressCount(received: estimate, verified: verified, wire: received)
                try await transfer.append(to: file, report: count) { (_: File) throws(FetchError) in }
            }
        }
    }

    /// Keeps the frames already written and goes on from the first frame not written. The
    /// file is left as it is: it holds only proven bytes (chunks released ahead stay
    /// readable), and every write is at its own offset.
    public mutating func rewind<File: DownloadSinkFile>(_ file: File, io: IOExecutor) async throws(FetchError) -> Int64 {
        let resume = writtenChunks < table.count ? table.uncompressedRange(ofChunk: writtenChunks).lowerBound : table.uncompressedBytes
        assembler = FrameAssembler(table: table, startingAt: writtenChunks < table.count ? table.frames(ofChunk: writtenChunks).lowerBound : table.frameCount)
        partial = FrameDecoder.PartialChunk()
        reported = nil
        return resume
    }

    public mutating func finish<File: DownloadSinkFile>(_ file: File, io: IOExecutor) async throws(FetchError) {
        guard assembler.isComplete else {
            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(source) ended at byte \(assembler.offset) of \(table.compressedBytes), in frame \(assembler.nextFrame) of \(table.frameCount)")
        }
    }
}
