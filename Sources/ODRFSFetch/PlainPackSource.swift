import Foundation
import NIOCore
import ODRFSCore
import ODRFSRuntime

/// A pack stored as it travels (`packs/<sha256>.tar`): streamed from the origin, hashed
/// chunk by chunk as it arrives (``PackVerifier``) and written as it is, its verified
/// prefix released to readers chunk by chunk. A chunk that differs from the manifest ends
/// the attempt at once as corrupt.
///
/// A large file's content-defined chunks (``PackChunkMap``) are released as each arrives
/// and matches its digest, ahead of the prefix. Bytes not yet proven are written at their
/// offsets but never over a range already released (a range fetched ahead of the stream):
/// see ``DownloadSinkFile/write(_:at:)``.
public struct PlainPackSource: PackSource {
    let pack: PackDescriptor
    let chunkSize: ByteCount
    /// The origin's name, for messages.
    let source: String
    let chunkMap: PackChunkMap
    private var verifier: PackVerifier
    /// Bytes received from `windowStart` on, kept while an index chunk may still be completed
    /// by them (about one chunk: they are dropped once no chunk of the map overlaps them).
    private var window: [UInt8] = []
    private var windowStart: Int64 = 0
    /// The last report: waiters care about the verified prefix, status about bytes received.
    private var reported: (received: Int64, verified: Int64)?

    /// An index chunk longer than this is left to the manifest's chunks (memory bound).
    static let maximumWindow = 16 << 20

    public init(pack: PackDescriptor, chunkSize: ByteCount, source: String, chunkMap: PackChunkMap = .empty) {
        (self.pack, self.chunkSize, self.source, self.chunkMap) = (pack, chunkSize, source, chunkMap)
        self.verifier = PackVerifier(expected: pack, chunkSize: chunkSize)
    }

    public var label: String { "pack" }
    public var readableSize: Int64? { pack.bytes.value }

    public mutating func attempt<File: DownloadSinkFile>(into file: File, through transfer: PackTransfer<File>) async throws(FetchError) {
        let (pack, chunkBytes, origin) = (self.pack, chunkSize.value, transfer.origin)
        // Every byte hashed is written: an attempt goes on from there.
        try await origin.download(pack.file, from: verifier.bytesReceived.value, expectedBytes: pack.bytes) { (bytes: ByteBuffer) async throws(FetchError) in
            // Before the buffer is hashed: one dropped here is fetched again.
            try await transfer.received(bytes.readableBytes)
            let at = verifier.bytesReceived.value
            bytes.withUnsafeReadableBytes { verifier.update($0) }
            if let bad = verifier.firstMismatchedChunk {
                // No point downloading the rest of a pack that is already known to be wrong.
                throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName) failed verification: chunk \(bad) differs from the manifest")
            }
            // Report the first write (it names the file), every new verified chunk, and
            // otherwise about once per chunk of bytes.
            let received = verifier.bytesReceived.value
            let verified = verifier.verifiedPrefix.value
            let report = reported == nil || verified != reported!.verified || received - reported!.received >= chunkBytes
            if report { reported = (received, verified) }
            try await transfer.append(to: file, report: report ? PackProgressCount(received: received, verified: verified, wire: received) : nil) { (file) throws(FetchError) in
                try file.write(bytes, at: at)
            }
            if !chunkMap.isEmpty {
                try await transfer.writeAhead(to: file, provenChunks(bytes, at: at))
            }
        }
    }

    /// The index's chunks that `bytes` (at pack offset `at`) complete, proven by their digests.
    private mutating func provenChunks(_ bytes: ByteBuffer, at: Int64) -> [(Int64, [UInt8])] {
        if windowStart + Int64(window.count) != at {
            window.removeAll(keepingCapacity: true)
            windowStart = at
        }
        bytes.withUnsafeReadableBytes { window.append(contentsOf: $0) }
        let (pieces, through) = window.withUnsafeBytes { chunkMap.verifiedPieces(of: $0, at: windowStart) }
        let end = windowStart + Int64(window.count)
        // Keep only what a chunk not yet whole may need: from the next chunk's start.
        let next = chunkMap.firstChunk(endingAfter: max(through, windowStart))
        let keepFrom = next < chunkMap.chunks.count ? max(through, chunkMap.chunks[next].range.lowerBound) : end
        let drop = Int(min(max(keepFrom, windowStart), end) - windowStart)
        if drop > 0 {
            window.removeFirst(drop)
            windowStart += Int64(drop)
        }
        if window.count > Self.maximumWindow {
            windowStart += Int64(window.count)
            window.removeAll()
        }
        return pieces
    }

    /// Goes back to the verified prefix with a verifier that has seen exactly those bytes
    /// (read back from the file, whose prefix is proven). The file is not cut: bytes past the
    /// prefix are either released (proven) or never read, and the next attempt writes at
    /// their offsets. Readers never notice: what they may read does not shrink.
    public mutating func rewind<File: DownloadSinkFile>(_ file: File, io: IOExecutor) async throws(FetchError) -> Int64 {
        let (prefix, pack) = (verifier.verifiedPrefix.value, self.pack)
        window.removeAll()
        windowStart = prefix
        var verifier = PackVerifier(expected: pack, chunkSize: chunkSize)
        var done: Int64 = 0
        while done < prefix {
            let wanted = Int(min(1 << 20, prefix - done))
            let offset = done
            // Read on the I/O executor, hashed here: the verifier stays with its download.
            let piece = try await io.run { () throws(FetchError) -> [UInt8] in
                var buffer = [UInt8](repeating: 0, count: wanted)
                while true {
                    let count = buffer.withUnsafeMutableBytes { pread(file.descriptor, $0.baseAddress, wanted, off_t(offset)) }
                    if count < 0 && errno == EINTR { continue }
                    guard count > 0 else {
                        throw FetchError(.localIO, "cache: cannot read back the verified part of pack '\(pack.id)': \(String(cString: strerror(errno)))")
                    }
                    buffer.removeLast(wanted - count)
                    return buffer
                }
            }
            piece.withUnsafeBytes { verifier.update($0) }
            done += Int64(piece.count)
        }
        self.verifier = verifier
        reported = nil
        return prefix
    }

    public mutating func finish<File: DownloadSinkFile>(_ file: File, io: IOExecutor) async throws(FetchError) {
        do {
            try verifier.finish()
        } catch {
            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(source) failed verification: \(error)")
        }
    }
}
