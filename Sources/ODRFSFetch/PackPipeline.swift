import Crypto
import Foundation
import Logging
import ODRFSCore
import ODRFSRuntime
import NIOCore

/// The acquisition pipeline: one download of one pack, from a ``PackSource`` (a plain
/// pack, a compressed pack, an update's assembly) into a ``DownloadSink``, publishing
/// only verified bytes.
///
/// What every download shares lives here once: the sink's file is made, attempts run
/// (stepping aside for an open when the scheduler's ``DownloadPacing`` says so, and
/// moving on to another server after bad bytes, keeping what is verified), the source
/// verifies the whole, and the file is published, or discarded on any failure or
/// cancellation. Below the pipeline each transfer retries by the origin's
/// ``RetryPolicy``. Single-flight and retains are the resource manager's job.
public struct PackPipeline<Sink: DownloadSink>: Sendable {
    public let origin: any Origin
    public let sink: Sink
    public let chunkSize: ByteCount
    /// Where writes, fsyncs and publication run (never on the cooperative pool).
    public let io: IOExecutor
    let logger: Logger
    /// Bytes of packs received from the origin, as they travelled (compressed or not);
    /// shared by the pipelines of one mount across revisions, so an update does not reset it.
    public let wire: WireByteCounter

    public init(origin: any Origin, sink: Sink, chunkSize: ByteCount, io: IOExecutor = .cache,
                wire: WireByteCounter = WireByteCounter(), logger: Logger) {
        self.origin = origin
        self.sink = sink
        self.chunkSize = chunkSize
        self.io = io
        self.wire = wire
        self.logger = logger
    }

    /// How far a pack download has come.
    public typealias Progress = PackProgress<Sink.File.Readable>

    /// How many times one pack download moves on after bad bytes (a set has at most 16
    /// servers; each that lies is dropped for the pack, see ``MirrorSet``).
    static var maximumRestarts: Int { MirrorSet.maximumMembers }

    /// Downloads `pack`, checks its size and every chunk hash (see `PackVerifier`) and
    /// publishes it into the sink: a plain or a compressed source, by the manifest.
    ///
    /// `progress` is called on the I/O thread right after a write, so whatever it wakes (a
    /// FUSE reply waiting for those bytes) runs there too: after the first write, whenever
    /// the verified prefix grows and at least once per chunk of bytes received. The
    /// readable has already advanced when `progress` runs; marking it complete after
    /// publication is left to the caller that records the pack as local.
    ///
    /// `pacing`, if given, is asked with each buffer's size before the buffer is written: the
    /// scheduler rate-limits background downloads there, and makes them step aside (drop
    /// the connection, then resume with a range request) while an open waits. `tally`, if
    /// given, is told every byte received from the origin, failed attempts' included.
    ///
    /// `chunkMap`, the file index's chunks of the pack's large files, lets bytes be released a
    /// chunk at a time as they verify; `demands`, ranges readers wait for ahead of the stream,
    /// are fetched by range alongside it (see `PackPipeline+Demands.swift`).
    @discardableResult
    public func fetch(_ pack: PackDescriptor, pacing: DownloadPacing? = nil, tally: DownloadWireTally? = nil,
                      chunkMap: PackChunkMap = .empty, demands: SpanDemands? = nil,
                      progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws(FetchError) -> Sink.Published {
        let table: FrameTable?
        do { table = try FrameTable(validating: pack, chunkSize: chunkSize) } catch {
            throw FetchError(.corrupt, "pack '\(pack.id)': \(error.message)")
        }
        let transfer = PackTransfer<Sink.File>(pack: pack, origin: origin, io: io, wire: wire, tally: tally, pacing: pacing, progress: progress)
        let alongside: (@Sendable (Sink.File) async -> Void)?
        if let demands {
            alongside = { [self] file in await serve(demands, of: pack, table: table, chunkMap: chunkMap, into: file, through: transfer) }
        } else {
            alongside = nil
        }
        defer { demands?.finish() }
        if let table {
            var source = CompressedPackSource(pack: pack, table: table, source: origin.displayName, chunkMap: chunkMap)
            return try await run(&source, pack, transfer, alongside: alongside)
        }
        var source = PlainPackSource(pack: pack, chunkSize: chunkSize, source: origin.displayName, chunkMap: chunkMap)
        return try await run(&source, pack, transfer, alongside: alongside)
    }

    /// Runs `source` to the end: the file, the attempts, the final check, publication.
    /// `alongside`, if given, runs with the attempts on the same file (serving demands) and is
    /// cancelled and awaited before the file is published or discarded.
    public func run<Source: PackSource>(_ source: inout Source, _ pack: PackDescriptor,
                                        _ transfer: PackTransfer<Sink.File>? = nil,
                                        alongside: (@Sendable (Sink.File) async -> Void)? = nil) async throws(FetchError) -> Sink.Published {
        let transfer = transfer ?? PackTransfer<Sink.File>(pack: pack, origin: origin, io: io, wire: wire)
        let (sink, label, size) = (self.sink, source.label, source.readableSize)
        let file = try await io.run { () throws(FetchError) -> Sink.File in try sink.makeFile(label: label, readableSize: size) }
        let helper = alongside.map { body in Task { await body(file) } }
        defer { helper?.cancel() }
        var restarts = 0
        do throws(FetchError) {
            attempts: while true {
                do throws(FetchError) {
                    try await source.attempt(into: file, through: transfer)
                    break attempts
                } catch {
                    if transfer.takeSteppedAside(), let pacing = transfer.pacing {
                        // Every byte accepted is kept: go on from there once the link is ours again.
                        try await pacing.untilResumable()
                        continue attempts
                    }
                    // Another server (a mirror) may have the right bytes: keep what is
                    // verified, fetch the rest there.
                    guard error.kind == .corrupt, source.restartsAfterBadBytes, restarts < Self.maximumRestarts,
                          origin.hasAlternative(for: pack.file) else { throw error }
                    restarts += 1
                    let offset = try await source.rewind(file, io: io)
                    logger.notice("resuming the pack from another server after bad bytes", metadata: [
                        "pack.id": "\(pack.id)", "fetch.offset": "\(offset)", "restart": "\(restarts)",
                    ])
                }
            }
            try await source.finish(file, io: io)
            // No write ahead of the stream may land once the file is published.
            helper?.cancel()
            await helper?.value
        } catch {
            helper?.cancel()
            await helper?.value
            // close + unlink block: on the I/O executor, like every other call on the file.
            await io.run { file.discard() }
            throw error
        }
        return try await io.run { () throws(FetchError) -> Sink.Published in try sink.publish(file, as: pack) }
    }

    /// Downloads the file index and checks its size and SHA-256. An index larger than
    /// ``BundleLimits/maxIndexBytes`` is refused before any byte is fetched (a validated
    /// manifest never names one); the origin is held to the declared size while streaming.
    /// How many bytes of a file index are written in one call on the I/O executor.
    static var indexWriteBatch: Int { 1 << 20 }

    public func fetch(_ index: IndexReference) async throws(FetchError) {
        guard index.bytes.value >= 0, index.bytes <= BundleLimits.maxIndexBytes else {
            throw FetchError(.corrupt, "file index \(index.file) is declared as \(index.bytes.value) bytes; the limit is \(BundleLimits.maxIndexBytes.value)")
        }
        let (sink, io) = (self.sink, self.io)
        let file = try await io.run { () throws(FetchError) -> Sink.File in try sink.makeFile(label: "index", readableSize: nil) }
        var hasher = SHA256()
        var done: Int64 = 0
        // Buffers are written in batches of about 1 MiB (an HTTP origin delivers them by the
        // 16-64 KiB), each batch on the I/O executor while the next is read and hashed: an
        // index is up to 1 GB (ten million files, issue 28). One batch at a time, in order.
        var writing: Task<Result<Void, FetchError>, Never>?
        var batch: [ByteBuffer] = []
        var batchBytes = 0
        func submit() async throws(FetchError) {
            try await writing?.value.get()
            let buffers = batch
            batch = []
            batchBytes = 0
            writing = Task {
                await io.run { () -> Result<Void, FetchError> in
                    do throws(FetchError) { for buffer in buffers { try file.append(buffer) } } catch { return .failure(error) }
                    return .success(())
                }
            }
        }
        do throws(FetchError) {
            try await origin.download(index.file, expectedBytes: index.bytes) { (bytes: ByteBuffer) async throws(FetchError) in
                bytes.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                done += Int64(bytes.readableBytes)
                batch.append(bytes)
                batchBytes += bytes.readableBytes
                if batchBytes >= Self.indexWriteBatch { try await submit() }
            }
            if !batch.isEmpty { try await submit() }
            try await writing?.value.get()
            let digest = ContentHash(digest: hasher.finalize())
            guard done == index.bytes.value, digest == index.sha256 else {
                throw FetchError(.corrupt, "file index \(index.file) from \(origin.displayName) is damaged: got \(done) bytes with SHA-256 \(digest.hex), manifest says \(index.bytes.value) bytes with \(index.sha256.hex)")
            }
        } catch {
            _ = await writing?.value
            await io.run { file.discard() }
            throw error
        }
        try await io.run { () throws(FetchError) in try sink.publish(file, index: index) }
    }
}
