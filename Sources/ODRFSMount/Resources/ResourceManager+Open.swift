import Foundation
import ODRFSCore
import ODRFSFetch
import ODRFSStore

extension ResourceManager {
    /// The fast half of open(), for the FUSE thread: if `pack` is local, or downloading
    /// with the bytes `needed` (the file's first bytes), or `orElse`, already verified, retains it and
    /// returns a reader; otherwise nil with nothing retained or started. Most opens of a pack
    /// that is streaming in find their bytes already there.
    ///
    /// Opening a published pack is one `open(2)` of a local file; done on the caller's
    /// thread (a FUSE worker or an I/O thread, never the cooperative pool).
    public func openReaderIfReady(_ pack: PackNumber, needing needed: Range<Int64>, orElse: Range<Int64>? = nil) -> PackReader? {
        guard case .ready(let file) = coordinator.join(pack, retains: true, priority: .urgent, needed: needed, orElse: orElse, startIfNeeded: false,
                                            registers: false, waiter: 0, resume: { _ in }) else { return nil }
        return try? makeReader(pack, file: file).get()
    }

    /// ``openReaderIfReady(_:needing:)`` for the pack's first `prefix` bytes.
    public func openReaderIfReady(_ pack: PackNumber, prefix: Int64) -> PackReader? {
        openReaderIfReady(pack, needing: 0..<max(0, prefix))
    }

    /// A reader of `pack` waits for `range`, not yet verified: if the pack's stream is far
    /// from it, fetch it by range alongside (``SpanDemands``). `jumped`: the read does not
    /// follow the handle's reads before it (see `ReaderTable.ReadCursor`); a sequential read
    /// is fetched ahead only when even the kernel's readahead would not bring the stream there.
    /// `speculative`: nobody waits for it yet (see ``SpanDemands``): served after reads.
    public func demand(_ range: Range<Int64>, of pack: PackNumber, jumped: Bool = true, speculative: Bool = false) {
        coordinator.demand(range, of: pack, jumped: jumped, speculative: speculative)
    }

    /// The slow half of open(): retains `pack` and calls `completion` once the bytes
    /// `needed` are downloaded *and* verified (by the manifest's chunk hashes or the index's
    /// chunk digests) — from the I/O thread that verified them, or from this thread if they
    /// already are. Bytes far ahead of the pack's stream are fetched by range. Withdraw with
    /// `cancelWaiter(waiter, on: pack)`; `completion` then gets `.cancelled`. With `orElse`,
    /// the bytes `orElse` verified first will do as well (a large file's end, asked for at its
    /// open, may arrive by range before the stream brings its start).
    public func openReader(
        _ pack: PackNumber, needing needed: Range<Int64>, orElse: Range<Int64>? = nil, priority: DownloadPriority = .urgent, waiter: UInt64,
        retryIfMissing: Bool = true,
        completion: @escaping @Sendable (Result<PackReader, FetchError>) -> Void
    ) {
        let resume: @Sendable (Result<VerifiedFile?, FetchError>) -> Void = { [self] result in
            // A failed download is final here (the downloader already retried); only a
            // cached copy that vanished is worth another download.
            let file: VerifiedFile?
            switch result {
            case .success(let verified): file = verified
            case .failure(let error): return completion(.failure(error))
            }
            switch makeReader(pack, file: file) {
            case .success(let reader):
                completion(.success(reader))
            case .failure(let error) where error.kind == .notFound && retryIfMissing:
                // The published copy vanished (deleted by hand) and is marked missing: fetch it again, once.
                openReader(pack, needing: needed, orElse: orElse, priority: priority, waiter: waiter, retryIfMissing: false, completion: completion)
            case .failure(let error):
                completion(.failure(error.kind == .notFound ? FetchError(.localIO, error.message) : error))
            }
        }
        switch coordinator.join(pack, retains: true, priority: priority, needed: needed, orElse: orElse, startIfNeeded: true, waiter: waiter, resume: resume) {
        case .ready(let file): resume(.success(file))
        case .waiting: break
        case .unavailable: completion(.failure(FetchError(.corrupt, "pack '\(manifest.pack(pack).id)' is not available")))
        }
    }

    /// Async form of `openReader`, for callers in tasks (tests, tools).
    public func openReader(_ pack: PackNumber, prefix: Int64, priority: DownloadPriority = .urgent) async throws(FetchError) -> PackReader {
        try await openReader(pack, needing: 0..<max(0, prefix), priority: priority)
    }

    /// Async form of `openReader` for the bytes `needed`.
    public func openReader(_ pack: PackNumber, needing needed: Range<Int64>, priority: DownloadPriority = .urgent) async throws(FetchError) -> PackReader {
        let file = try await coordinator.acquire(pack, retains: true, priority: priority, needed: needed)
        return try makeReader(pack, file: file).get()
    }

    /// A reader over `file` (a download in progress) or, when nil, the published pack.
    /// The retain is already taken; it is dropped if the published copy cannot be opened
    /// (a vanished file is marked missing and reported as `.notFound`, so the next open
    /// downloads it again).
    private func makeReader(_ pack: PackNumber, file: VerifiedFile?) -> Result<PackReader, FetchError> {
        if let file { return .success(PackReader(pack: pack, file: file, manager: self)) }
        let descriptor = manifest.pack(pack)
        let path = store.path(of: descriptor)
        if let published = VerifiedFile.openPublished(path: path, size: descriptor.bytes.value) {
            return .success(PackReader(pack: pack, file: table.keep(published, for: pack), manager: self))
        }
        let code = errno
        release(pack)
        logger.error("cannot open cached pack", metadata: ["pack.id": "\(descriptor.id)", "pack.path": "\(path)", "errno": "\(code)"])
        let reason = "cannot open the cached pack \(path): \(String(cString: strerror(code)))"
        switch code {
        case ENOENT:
            markMissing(pack)
            return .failure(FetchError(.notFound, reason))
        case EMFILE, ENFILE:
            return .failure(FetchError(.tooManyOpenFiles, reason))
        default:
            return .failure(FetchError(.localIO, reason))
        }
    }
}
