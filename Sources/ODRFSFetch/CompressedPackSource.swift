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
    private var assembler: FrameAssembler
    private var received: Int64 = 0
    private var verified: Int64 = 0
    private var reported: Int64?
    /// Chunks decoded, verified and written: where a download resumes after bad bytes.
    private var writtenChunks = 0
    /// The frames of the chunk arriving, decoded but not yet verified.
    private var partial = FrameDecoder.PartialChunk()

    public init(pack: PackDescriptor, table: FrameTable, source: String) {
        (self.pack, self.table, self.source) = (pack, table, source)
        self.decoder = FrameDecoder(pack: pack, table: table, source: source)
        self.assembler = FrameAssembler(table: table)
    }

    public var label: String { "pack" }
    public var readableSize: Int64? { pack.bytes.value }

    public mutating func attempt<File: DownloadSinkFile>(into file: File, through transfer: PackTransfer<File>) async throws(FetchError) {
        let (pack, table, decoder) = (self.pack, self.table, self.decoder)
        try await transfer.origin.download(pack.file, from: assembler.offset, expectedBytes: ByteCount(table.compressedBytes)) { (bytes: ByteBuffer) async throws(FetchError) in
            try await transfer.received(bytes.readableBytes)
            received += Int64(bytes.readableBytes)
            let frames = try assembler.append(bytes)
            var chunks: [FrameDecoder.Chunk] = []
            if !frames.isEmpty {
                let start = partial
                let (decoded, next) = try await FrameDecoder.executor.run { () throws(FetchError) -> ([FrameDecoder.Chunk], FrameDecoder.PartialChunk) in
                    var joining = start
                    let chunks = try decoder.decode(frames, partial: &joining)
                    return (chunks, joining)
                }
                (chunks, partial) = (decoded, next)
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
                try await transfer.append(to: file, report: count) { (file) throws(FetchError) in try file.append(content) }
                writtenChunks = chunk.chunk + 1
            }
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

    /// Keeps the frames already written and goes on from the first frame not written.
    public mutating func rewind<File: DownloadSinkFile>(_ file: File, io: IOExecutor) async throws(FetchError) -> Int64 {
        let resume = writtenChunks < table.count ? table.uncompressedRange(ofChunk: writtenChunks).lowerBound : table.uncompressedBytes
        try await io.run { () throws(FetchError) in try file.resize(to: resume) }
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
