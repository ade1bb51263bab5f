import NIOCore
import ODRFSCore
import ODRFSRuntime
import Synchronization

/// Where a ``PackPipeline`` gets one pack's bytes: a plain pack streamed and hashed
/// (``PlainPackSource``), a compressed pack decoded frame by frame
/// (``CompressedPackSource``), or an update's pack assembled from cached packs and
/// fetched spans (ODRFSMount's delta source). The pipeline owns the file, the attempts
/// and publication; a source only moves bytes into the file and vouches for them.
public protocol PackSource {
    /// The sink file's label ("pack", "update").
    var label: String { get }
    /// With a size, readers may follow the file as it is verified (progressive open).
    var readableSize: Int64? { get }
    /// Whether bad bytes from one server may be replaced by another's (a mirror set).
    var restartsAfterBadBytes: Bool { get }
    /// One attempt: moves bytes into `file` from where the last one stopped. Only bytes
    /// already verified are released to readers; a source that cannot verify as it goes
    /// verifies in ``finish(_:io:)``, before publication.
    mutating func attempt<File: DownloadSinkFile>(into file: File, through transfer: PackTransfer<File>) async throws(FetchError)
    /// After bad bytes: cuts `file` back to what is verified and returns that offset; the
    /// next attempt goes on from there (with another server).
    mutating func rewind<File: DownloadSinkFile>(_ file: File, io: IOExecutor) async throws(FetchError) -> Int64
    /// After the last attempt: fails unless the whole pack is in `file`, verified.
    mutating func finish<File: DownloadSinkFile>(_ file: File, io: IOExecutor) async throws(FetchError)
}

extension PackSource {
    public var restartsAfterBadBytes: Bool { true }
}

/// What a ``PackSource`` reaches through the pipeline during one download: the origin,
/// the I/O executor, and the bookkeeping every downloaded byte goes through once — the
/// mount's wire counter, the download's tally, the scheduler's pacing, the progress
/// callback.
public final class PackTransfer<File: DownloadSinkFile>: Sendable {
    public let pack: PackDescriptor
    public let origin: any Origin
    public let io: IOExecutor
    let wire: WireByteCounter
    let tally: DownloadWireTally?
    let pacing: DownloadPacing?
    let progress: @Sendable (PackProgress<File.Readable>) -> Void
    private let steppedAside = Atomic<Bool>(false)
    /// The last counts reported: what a release ahead of the stream reports again.
    private let lastReport = Mutex(PackProgressCount(received: 0, verified: 0, wire: 0))

    init(pack: PackDescriptor, origin: any Origin, io: IOExecutor, wire: WireByteCounter, tally: DownloadWireTally? = nil,
         pacing: DownloadPacing? = nil, progress: @escaping @Sendable (PackProgress<File.Readable>) -> Void = { _ in }) {
        (self.pack, self.origin, self.io, self.wire, self.tally, self.pacing, self.progress) = (pack, origin, io, wire, tally, pacing, progress)
    }

    /// Every buffer from the origin, before it is used: counted (it travelled, whatever
    /// happens to it next), then paced; throws to drop the connection when the download
    /// steps aside for an open (the pipeline resumes it).
    public func received(_ count: Int) async throws(FetchError) {
        wire.add(Int64(count))
        tally?.add(Int64(count))
        if let pacing, try await pacing.beforeWrite(count) == .stepAside {
            steppedAside.store(true, ordering: .relaxed)
            throw DownloadPacing.steppedAside("pack '\(pack.id)'")
        }
    }

    /// Whether the last attempt ended by stepping aside (and clears it).
    func takeSteppedAside() -> Bool { steppedAside.exchange(false, ordering: .relaxed) }

    /// Appends `write`'s bytes to `file` on the I/O executor; with `report`, then releases
    /// its verified count to readers and calls the progress callback there.
    public func append(to file: File, report: PackProgressCount?, _ write: @escaping @Sendable (File) throws(FetchError) -> Void) async throws(FetchError) {
        let progress = self.progress
        try await io.run { [self] () throws(FetchError) in
            try write(file)
            guard let report, let readable = file.readable else { return }
            file.release(verifiedUpTo: report.verified)
            lastReport.withLock { $0 = report }
            progress(PackProgress(received: ByteCount(report.received), verified: ByteCount(report.verified),
                                  file: readable, wireBytes: ByteCount(report.wire)))
        }
    }

    /// Writes proven `pieces` (offset, bytes: each proven by a chunk digest of the file
    /// index or a chunk hash of the manifest) into `file` on the I/O executor and releases
    /// them to readers ahead of the prefix, then reports progress again with the last counts
    /// so that the waiters for those ranges are answered.
    public func writeAhead(to file: File, _ pieces: [(Int64, [UInt8])]) async throws(FetchError) {
        guard !pieces.isEmpty else { return }
        let progress = self.progress
        try await io.run { [self] () throws(FetchError) in
            for (offset, bytes) in pieces {
                try file.writeVerified(bytes, at: offset, release: true)
            }
            guard let readable = file.readable else { return }
            let report = lastReport.withLock { $0 }
            progress(PackProgress(received: ByteCount(report.received), verified: ByteCount(report.verified),
                                  file: readable, wireBytes: ByteCount(report.wire)))
        }
    }
}

/// How far a pack download has come.
public struct PackProgress<Readable: Sendable>: Sendable {
    /// Bytes received and written to the file (uncompressed).
    public var received: ByteCount
    /// Leading bytes whose chunk hashes matched, already written: safe to serve.
    public var verified: ByteCount
    /// The file being written, with its own verified prefix; progressive readers read
    /// it (the same inode is renamed into place when the pack is published).
    public var file: Readable
    /// Bytes of the pack file received from the origin so far: the compressed bytes of
    /// a compressed pack, else the same as `received`.
    public var wireBytes: ByteCount = .zero
}

/// Counts for one progress report: bytes in the file, bytes verified, bytes off the wire.
public struct PackProgressCount: Sendable {
    public var received: Int64
    public var verified: Int64
    public var wire: Int64
}

extension DownloadSinkFile {
    /// Appends a buffer from the network.
    func append(_ bytes: ByteBuffer) throws(FetchError) {
        var failure: FetchError?
        bytes.withUnsafeReadableBytes { raw in
            do throws(FetchError) { try append(raw) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Writes proven bytes at `offset` (see ``writeVerified(_:at:release:)``).
    func writeVerified(_ bytes: [UInt8], at offset: Int64, release: Bool) throws(FetchError) {
        var failure: FetchError?
        bytes.withUnsafeBytes { raw in
            do throws(FetchError) { try writeVerified(raw, at: offset, release: release) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Writes a buffer from the network, not yet proven, at `offset` (see ``write(_:at:)``).
    func write(_ bytes: ByteBuffer, at offset: Int64) throws(FetchError) {
        var failure: FetchError?
        bytes.withUnsafeReadableBytes { raw in
            do throws(FetchError) { try write(raw, at: offset) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Appends decoded bytes.
    func append(_ bytes: [UInt8]) throws(FetchError) {
        var failure: FetchError?
        bytes.withUnsafeBytes { raw in
            do throws(FetchError) { try append(raw) } catch { failure = error }
        }
        if let failure { throw failure }
    }
}
