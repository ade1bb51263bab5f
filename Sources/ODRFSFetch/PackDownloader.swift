import Crypto
import Foundation
import Logging
import ODRFSCore
import ODRFSStore

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
    private let logger: Logger

    public init(origin: any Origin, store: PackStore, chunkSize: ByteCount, logger: Logger) {
        self.origin = origin
        self.store = store
        self.chunkSize = chunkSize
        self.logger = logger
    }

    /// How far a pack download has come.
    public struct Progress: Sendable {
        /// Bytes received and written to the temporary file.
        public var received: ByteCount
        /// Leading bytes whose chunk hashes matched, already written: safe to serve.
        public var verified: ByteCount
        /// The temporary file being written (the same inode is renamed into place).
        public var temporaryPath: String
    }

    /// Downloads `pack`, checks its size and every chunk hash (see `PackVerifier`),
    /// publishes it at `store.path(of: pack)` and records it in the cache index.
    /// `progress` is called after the first write, whenever the verified prefix grows and
    /// at least once per chunk of bytes received.
    @discardableResult
    public func fetch(_ pack: PackDescriptor, progress: (Progress) -> Void = { _ in }) async throws(FetchError) -> CachedPack {
        let file = try temporaryFile(label: "pack")
        var verifier = PackVerifier(expected: pack, chunkSize: chunkSize)
        var reported: Progress?
        try await origin.download(pack.file, expectedBytes: pack.bytes) { (bytes: UnsafeRawBufferPointer) throws(FetchError) in
            verifier.update(bytes)
            if let bad = verifier.firstMismatchedChunk {
                // No point downloading the rest of a pack that is already known to be wrong.
                throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName) failed verification: chunk \(bad) differs from the manifest")
            }
            try write(bytes, to: file)
            // Waiters care about the verified prefix, which moves once per chunk; status
            // about bytes received. Report the first write (it names the file), every new
            // verified chunk, and otherwise about once per chunk of bytes.
            let verified = verifier.verifiedPrefix
            if reported == nil || verified != reported!.verified || verifier.bytesReceived.value - reported!.received.value >= chunkSize.value {
                let now = Progress(received: verifier.bytesReceived, verified: verified, temporaryPath: file.path)
                reported = now
                progress(now)
            }
        }
        do {
            try verifier.finish()
        } catch {
            file.discard()
            throw FetchError(.corrupt, "pack '\(pack.id)' (\(pack.file)) from \(origin.displayName) failed verification: \(error)")
        }
        do {
            return try store.publish(file, as: pack, at: Date())
        } catch {
            throw Self.localError(error)
        }
    }

    /// Downloads the file index and checks its size and SHA-256. An index larger than
    /// ``BundleLimits/maxIndexBytes`` is refused before any byte is fetched (a validated
    /// manifest never names one); the origin is held to the declared size while streaming.
    public func fetch(_ index: IndexReference) async throws(FetchError) {
        guard index.bytes.value >= 0, index.bytes <= BundleLimits.maxIndexBytes else {
            throw FetchError(.corrupt, "file index \(index.file) is declared as \(index.bytes.value) bytes; the limit is \(BundleLimits.maxIndexBytes.value)")
        }
        let file = try temporaryFile(label: "index")
        var hasher = SHA256()
        var done: Int64 = 0
        try await origin.download(index.file, expectedBytes: index.bytes) { (bytes: UnsafeRawBufferPointer) throws(FetchError) in
            hasher.update(bufferPointer: bytes)
            try write(bytes, to: file)
            done += Int64(bytes.count)
        }
        let digest = ContentHash(digest: hasher.finalize())
        guard done == index.bytes.value, digest == index.sha256 else {
            file.discard()
            throw FetchError(.corrupt, "file index \(index.file) from \(origin.displayName) is damaged: got \(done) bytes with SHA-256 \(digest.hex), manifest says \(index.bytes.value) bytes with \(index.sha256.hex)")
        }
        try publish(file, to: store.path(of: index))
    }

    private func temporaryFile(label: String) throws(FetchError) -> TemporaryFile {
        do {
            return try store.makeTemporaryFile(label: label)
        } catch {
            throw Self.localError(error)
        }
    }

    private func write(_ bytes: UnsafeRawBufferPointer, to file: TemporaryFile) throws(FetchError) {
        do {
            try file.write(bytes)
        } catch {
            throw Self.localError(error)
        }
    }

    private func publish(_ file: TemporaryFile, to destination: String) throws(FetchError) {
        do {
            try store.publish(file, to: destination)
        } catch {
            throw Self.localError(error)
        }
    }

    private static func localError(_ error: StoreError) -> FetchError {
        FetchError(error.kind == .noSpace ? .noSpace : .localIO, "cache: \(error.message)")
    }
}
