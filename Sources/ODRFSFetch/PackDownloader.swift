import Crypto
import Foundation
import Logging
import ODRFSCore
import ODRFSRuntime
import ODRFSStore
import NIOCore

/// Copies packs and the file index from an origin into the cache, verifying them
/// while they stream and publishing only verified bytes.
///
/// Nothing here is shared between downloads: single-flight and retains are the
/// resource manager's job. A failed or cancelled download leaves no file behind
/// (its `TemporaryFile` is discarded).
public struct PackDownloader: Sendable {
    public let origin: any Origin
    public let store: PackStore
    public let chunkSize: ByteCount
    /// Where writes, fsyncs and publication run (never on the cooperative pool).
    public let io: IOExecutor
    let logger: Logger
    /// Bytes of packs received from the origin, as they travelled (compressed or not);
    /// shared by the downloaders of one mount across revisions, so an update does not reset it.
    public let wire: WireByteCounter

    public init(origin: any Origin, store: PackStore, chunkSize: ByteCount, io: IOExecutor = .cache,
                wire: WireByteCounter = WireByteCounter(), logger: Logger) {
        self.origin = origin
        self.wire = wire
        self.store = store
        self.chunkSize = chunkSize
        self.io = io
        self.logger = logger
    }

    /// How far a pack download has come.
    public struct Progress: Sendable {
        /// Bytes received and written to the temporary file.
        public var received: ByteCount
        /// Leading bytes whose chunk hashes matched, already written: safe to serve.
        public var verified: ByteCount
        /// The file being written, with its own verified prefix; progressive readers read
        /// it (the same inode is renamed into place when the pack is published).
        public var file: VerifiedFile
        /// Bytes of the pack file received from the origin so far: the compressed bytes of
        /// a compressed pack, else the same as `received`.
        public var wireBytes: ByteCount = .zero
    }

    /// Downloads `pack`, checks its size and every chunk hash (see `PackVerifier`),
    /// publishes it at `store.path(of: pack)` and records it in the cache index.
    ///
    /// Bytes are hashed as they arrive and written on the I/O executor; `progress` is
    /// called on the I/O thread right after a write, so whatever it wakes (a FUSE reply
    /// waiting for those bytes) runs there too, without waiting for a task to be
    /// scheduled. It is called after the first write, whenever the verified prefix grows
    /// and at least once per chunk of bytes received. The file's ``VerifiedFile`` has
    /// already advanced when `progress` runs; marking it complete after publication is left
    /// to the caller that records the pack as local.
    @discardableResult
    ///
    /// `pacing`, if given, is asked with each buffer's size before the buffer is written: the
    /// scheduler rate-limits background downloads there, and makes them step aside (drop
    /// the connection, then resume with a range request) while an open waits.
    ///
    /// `tally`, if given, is told every byte received from the origin (compressed as it
    /// travelled), the bytes of attempts that failed included.
    public func fetch(_ pack: PackDescriptor, pacing: DownloadPacing? = nil,
                      tally: DownloadWireTally? = nil,
                      progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws(FetchError) -> CachedPack {
        let table: FrameTable?
        do { table = try FrameTable(validating: pack, chunkSize: chunkSize) } catch {
            throw FetchError(.corrupt, "pack '\(pack.id)': \(error.message)")
        }
        if let table { return try await fetchCompressed(pack, table: table, pacing: pacing, tally: tally, progress: progress) }
        let store = self.store
        let wire = self.wire
        let file = try await io.run { () throws(FetchError) -> TemporaryFile in
            do throws(StoreError) {
                return try store.makeTemporaryFile(label: "pack", readableSize: pack.bytes.value)
            } catch {
                throw Self.localError(error)
            }
        }
        guard let readable = file.verified else { throw FetchError(.localIO, "cache: no readable download file") }
        var verifier = PackVerifier(expected: pack, chunkSize: chunkSize)
        var reported: (received: Int64, verified: Int64)?
        let chunkBytes = chunkSize.value
        // Where the next attempt starts: after bad bytes from one mirror, the verified prefix.
        var offset: Int64 = 0
        var restarts = 0
        // Set when the pacing made the download step aside (not a failure: it resumes).
        var steppedAside = false
        do {
            attempts: while true {
                let failure: FetchError
                do throws(FetchError) {
                    try await origin.download(pack.file, from: offset, expectedBytes: pack.bytes) { (bytes: ByteBuffer) async throws(FetchError) in
                        // The origin sent it, whatever happens to it next.
                        wire.add(Int64(bytes.readableBytes))
                        tally?.add(Int64(bytes.readableBytes))
                        // Before the buffer is hashed: one dropped here is fetched again.
                        if let pacing, try await pacing.beforeWrite(bytes.readableBytes) == .stepAside {
                            steppedAside = true
                            throw DownloadPacing.steppedAside("pack '\(pack.id)'")
                        }
                        bytes.withUnsafeReadableBytes { verifier.update($0) }
                        if let bad = verifier.firstMismatchedChunk {
                            // No point downloading the rest of a pack that is already known to be wrong.
                            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName) failed verification: chunk \(bad) differs from the manifest")
                        }
                        // Waiters care about the verified prefix, which moves once per chunk; status
                        // about bytes received. Report the first write (it names the file), every new
                        // verified chunk, and otherwise about once per chunk of bytes.
                        let received = verifier.bytesReceived.value
                        let verified = verifier.verifiedPrefix.value
                        let report = reported == nil || verified != reported!.verified || received - reported!.received >= chunkBytes
                        if report { reported = (received, verified) }
                        try await io.run { () throws(FetchError) in
                            try Self.write(bytes, to: file)
                            guard report else { return }
                            readable.advance(to: verified)
                            progress(Progress(received: ByteCount(received), verified: ByteCount(verified), file: readable,
                                              wireBytes: ByteCount(received)))
                        }
                    }
                    break attempts
                } catch {
                    failure = error
                }
                if steppedAside, let pacing {
                    // Every byte hashed is written: go on from there once the link is ours again.
                    steppedAside = false
                    offset = verifier.bytesReceived.value
                    try await pacing.untilResumable()
                    continue attempts
                }
                guard failure.kind == .corrupt, restarts < Self.maximumRestarts, origin.hasAlternative(for: pack.file) else {
                    throw failure
                }
                // Another server may have the right bytes: keep what is verified, fetch the rest there.
                restarts += 1
                offset = verifier.verifiedPrefix.value
                verifier = try await Self.rewind(file, readable: readable, to: offset, pack: pack, chunkSize: chunkSize, io: io)
                reported = nil
                logger.notice("resuming the pack from another server after bad bytes", metadata: [
                    "pack.id": "\(pack.id)", "fetch.offset": "\(offset)", "restart": "\(restarts)",
                ])
            }
            try verifier.finish()
        } catch let error as FetchError {
            // close + unlink block: on the I/O executor, like every other call on the file.
            await io.run { file.discard() }
            throw error
        } catch {
            await io.run { file.discard() }
            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName) failed verification: \(error)")
        }
        return try await io.run { () throws(FetchError) -> CachedPack in
            do throws(StoreError) {
                return try store.publish(file, as: pack, at: Date())
            } catch {
                throw Self.localError(error)
            }
        }
    }

    /// Downloads the file index and checks its size and SHA-256. An index larger than
    /// ``BundleLimits/maxIndexBytes`` is refused before any byte is fetched (a validated
    /// manifest never names one); the origin is held to the declared size while streaming.
    public func fetch(_ index: IndexReference) async throws(FetchError) {
        guard index.bytes.value >= 0, index.bytes <= BundleLimits.maxIndexBytes else {
            throw FetchError(.corrupt, "file index \(index.file) is declared as \(index.bytes.value) bytes; the limit is \(BundleLimits.maxIndexBytes.value)")
        }
        let store = self.store
        let file = try await io.run { () throws(FetchError) -> TemporaryFile in
            do throws(StoreError) {
                return try store.makeTemporaryFile(label: "index")
            } catch {
                throw Self.localError(error)
            }
        }
        var hasher = SHA256()
        var done: Int64 = 0
        try await origin.download(index.file, expectedBytes: index.bytes) { (bytes: ByteBuffer) async throws(FetchError) in
            bytes.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            done += Int64(bytes.readableBytes)
            try await io.run { () throws(FetchError) in try Self.write(bytes, to: file) }
        }
        let digest = ContentHash(digest: hasher.finalize())
        guard done == index.bytes.value, digest == index.sha256 else {
            await io.run { file.discard() }
            throw FetchError(.corrupt, "file index \(index.file) from \(origin.displayName) is damaged: got \(done) bytes with SHA-256 \(digest.hex), manifest says \(index.bytes.value) bytes with \(index.sha256.hex)")
        }
        let destination = store.path(of: index)
        try await io.run { () throws(FetchError) in
            do throws(StoreError) {
                try store.publish(file, to: destination)
            } catch {
                throw Self.localError(error)
            }
        }
    }

    /// Blocking: runs on the I/O executor.
    private static func write(_ bytes: ByteBuffer, to file: TemporaryFile) throws(FetchError) {
        var failure: StoreError?
        bytes.withUnsafeReadableBytes { buffer in
            do throws(StoreError) { try file.write(buffer) } catch { failure = error }
        }
        if let failure { throw localError(failure) }
    }

    static func localError(_ error: StoreError) -> FetchError {
        FetchError(error.kind == .noSpace ? .noSpace : .localIO, "cache: \(error.message)")
    }
}
