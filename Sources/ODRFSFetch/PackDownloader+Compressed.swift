import Foundation
import NIOCore
import ODRFSCore
import ODRFSStore

extension PackDownloader {
    /// Downloads a compressed pack (`packs/<sha256>.tar.zst`): streams the frames, decodes
    /// and verifies each one as soon as it is whole (``FrameDecoder``, off the cooperative
    /// pool), and writes only verified, uncompressed chunks to the cache file — which is
    /// then the same file an uncompressed download would have made, so reads, progressive
    /// open and purge accounting do not know the pack travelled compressed.
    ///
    /// Resume: when a connection drops, the origin resumes the transfer at the first byte
    /// not yet received (a Range request); the frame arriving then is held in memory, so
    /// no frame already verified — nor any byte of the one in progress — is fetched again.
    /// A frame that does not decode, expands past its chunk or differs from its chunk hash
    /// fails the download as corrupt (the mount's open gets EIO; the next open retries).
    ///
    /// `pacing` rate-limits background downloads between buffers and makes them step aside,
    /// as for a plain pack; the frame in progress is kept and the transfer resumes after it.
    func fetchCompressed(_ pack: PackDescriptor, table: FrameTable,
                         pacing: DownloadPacing?, tally: DownloadWireTally?,
                         progress: @escaping @Sendable (Progress) -> Void) async throws(FetchError) -> CachedPack {
        let store = self.store
        let io = self.io
        let wire = self.wire
        let file = try await io.run { () throws(FetchError) -> TemporaryFile in
            do throws(StoreError) {
                return try store.makeTemporaryFile(label: "pack", readableSize: pack.bytes.value)
            } catch {
                throw Self.localError(error)
            }
        }
        guard let readable = file.verified else { throw FetchError(.localIO, "cache: no readable download file") }
        var assembler = FrameAssembler(table: table)
        let decoder = FrameDecoder(pack: pack, table: table, source: origin.displayName)
        var received: Int64 = 0
        var verified: Int64 = 0
        var reported: Int64?
        // Frames decoded, verified and written: where a download resumes after bad bytes.
        var writtenChunks = 0
        var restarts = 0
        // Set when the pacing made the download step aside (not a failure: it resumes).
        var steppedAside = false
        do throws(FetchError) {
            attempts: while true {
                do throws(FetchError) {
                    try await origin.download(pack.file, from: assembler.offset, expectedBytes: ByteCount(table.compressedBytes)) { (bytes: ByteBuffer) async throws(FetchError) in
                        // The origin sent it, whatever happens to it next.
                        wire.add(Int64(bytes.readableBytes))
                        tally?.add(Int64(bytes.readableBytes))
                        if let pacing, try await pacing.beforeWrite(bytes.readableBytes) == .stepAside {
                            steppedAside = true
                            throw DownloadPacing.steppedAside("pack '\(pack.id)'")
                        }
                        received += Int64(bytes.readableBytes)
                        let frames = try assembler.append(bytes)
                        for frame in frames {
                            let content = try await FrameDecoder.executor.run { () throws(FetchError) -> [UInt8] in
                                try decoder.decode(frame)
                            }
                            let range = table.uncompressedRange(ofChunk: frame.chunk)
                            // As for a plain tar: a trailing partial chunk is released to readers
                            // only when the pack is published, so a reader that got its bytes sees
                            // the pack local (the caller marks the file complete then).
                            verified = range.count == table.chunkSize ? range.upperBound : verified
                            let (done, proven, onWire) = (range.upperBound, verified, received)
                            reported = done
                            try await io.run { () throws(FetchError) in
                                var failure: StoreError?
                                content.withUnsafeBytes { buffer in
                                    do throws(StoreError) { try file.write(buffer) } catch { failure = error }
                                }
                                if let failure { throw Self.localError(failure) }
                                readable.advance(to: proven)
                                progress(Progress(received: ByteCount(done), verified: ByteCount(proven), file: readable,
                                                  wireBytes: ByteCount(onWire)))
                            }
                            writtenChunks = frame.chunk + 1
                        }
                        // Between frames, progress in uncompressed units is estimated from the share
                        // of the current frame received (status, progress bars): reported on the
                        // first bytes and then at most every quarter chunk; nothing is released.
                        let estimate = assembler.estimatedUncompressedOffset
                        if frames.isEmpty, reported.map({ estimate - $0 >= table.chunkSize / 4 }) ?? true {
                            reported = estimate
                            let (proven, onWire) = (verified, received)
                            await io.run {
                                progress(Progress(received: ByteCount(estimate), verified: ByteCount(proven), file: readable,
                                                  wireBytes: ByteCount(onWire)))
                            }
                        }
                    }
                    break attempts
                } catch {
                    if steppedAside, let pacing {
                        // The assembler holds every byte accepted: resume right after them.
                        steppedAside = false
                        try await pacing.untilResumable()
                        continue attempts
                    }
                    // A server sent a frame that does not decode or verify: another server
                    // (a mirror) may have the right one. Keep the frames already written and
                    // fetch the rest there, from the first frame not written.
                    guard error.kind == .corrupt, restarts < Self.maximumRestarts, origin.hasAlternative(for: pack.file) else {
                        throw error
                    }
                    restarts += 1
                    let resume = writtenChunks < table.count ? table.uncompressedRange(ofChunk: writtenChunks).lowerBound : table.uncompressedBytes
                    try await io.run { () throws(FetchError) in
                        do throws(StoreError) { try file.truncate(to: resume) } catch { throw Self.localError(error) }
                    }
                    assembler = FrameAssembler(table: table, startingAt: writtenChunks)
                    reported = nil
                    logger.notice("resuming the compressed pack from another server after bad bytes", metadata: [
                        "pack.id": "\(pack.id)", "fetch.frame": "\(writtenChunks)", "restart": "\(restarts)",
                    ])
                }
            }
            guard assembler.isComplete else {
                throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName) ended at byte \(assembler.offset) of \(table.compressedBytes), in frame \(assembler.nextChunk) of \(table.count)")
            }
        } catch {
            // close + unlink block: on the I/O executor, like every other call on the file.
            await io.run { file.discard() }
            throw error
        }
        return try await io.run { () throws(FetchError) -> CachedPack in
            do throws(StoreError) {
                return try store.publish(file, as: pack, at: Date())
            } catch {
                throw Self.localError(error)
            }
        }
    }
}
