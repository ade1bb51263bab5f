import Foundation
import Logging
import NIOCore
import ODRFSCore

/// Where a bundle's dist dir lives: a local directory or an HTTP(S) server.
///
/// An origin only moves bytes. Verification, retries and single-flight live above
/// it (in `PackPipeline` and the resource manager), so every origin gets them.
/// Paths are relative to the dist dir and already validated by `Manifest.decode`.
public protocol Origin: Sendable {
    /// A description for messages and logs; never contains credentials.
    var displayName: String { get }

    /// Reads a whole small file such as `manifest.json`, refusing more than `limit` bytes.
    func data(at path: String, limit: ByteCount) async throws(FetchError) -> Data

    /// Streams the file at `path` to `consume` in order, in chunks of any size; the next
    /// chunk is not requested before `consume` returns (backpressure: the cache writes
    /// at its own pace). Stops early with an error if the file is longer than `expectedBytes`.
    func download(
        _ path: String,
        expectedBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError)

    /// Like `download(_:expectedBytes:into:)` but from byte `offset` on: `consume` gets the
    /// bytes after the first `offset`. Used to move a download to another mirror without
    /// fetching again what is already verified.
    func download(
        _ path: String,
        from offset: Int64,
        expectedBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError)

    /// Streams bytes `range` of the file at `path` (whose size the manifest says is
    /// `fileBytes`) to `consume`, in order. HTTP origins send one range request; the
    /// default reads the whole file and keeps the span (see ``servesRanges``). Used by
    /// updates to fetch only the spans (or frames) of a changed pack the cache lacks.
    func download(
        _ path: String,
        range: Range<Int64>,
        fileBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError)

    /// Streams bytes `ranges` of the file at `path` (`fileBytes` long) to `consume`, each
    /// chunk with its offset in the file; a range's bytes in order, the ranges in any order,
    /// every byte once. Overlapping or adjacent ranges are merged first. HTTP origins ask
    /// for all of them in one request (`multipart/byteranges`, see
    /// `HTTPOrigin+MultiRange.swift`); the default (`Origin+MultiRange.swift`) sends one
    /// range request per range, or reads the file once when ``servesRanges`` is false.
    func download(
        _ path: String,
        ranges: [Range<Int64>],
        fileBytes: ByteCount,
        into consume: RangeSink
    ) async throws(FetchError)

    /// Whether ``download(_:range:fileBytes:into:)`` costs only the range. When false, a
    /// caller that needs several spans of one file should read it once instead.
    var servesRanges: Bool { get }

    /// Reads a small file (the manifest) unless it still has the ETag `etag`: an HTTP
    /// origin sends a conditional GET, so a periodic update check costs one 304 while
    /// nothing changed. The default reads the file and reports it modified, without ETag.
    func conditionalData(at path: String, limit: ByteCount, etag: String?) async throws(FetchError) -> ConditionalFetch

    /// Whether another server could still serve `path` after one sent bad bytes for it
    /// (see ``MirrorSet``); a download that failed verification is then worth retrying.
    func hasAlternative(for path: String) -> Bool

    /// Releases connections and threads; the daemon calls it once at exit, after the last fetch.
    func shutdown() async

    /// The health records of the servers behind this origin (one per HTTP server), for
    /// status and the background probe. Empty for a local dist dir, which is always there.
    var health: [OriginHealth] { get }
}

extension Origin {
    /// Nothing to release by default (a file origin holds no open files between calls).
    public func shutdown() async {}

    /// No network behind it: nothing to report.
    public var health: [OriginHealth] { [] }

    /// One server: nowhere else to go.
    public func hasAlternative(for path: String) -> Bool { false }

    /// Reads the whole file and skips the first `offset` bytes: correct for any origin;
    /// HTTP origins override it with a range request.
    public func download(
        _ path: String,
        from offset: Int64,
        expectedBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError) {
        var skip = max(0, offset)
        try await download(path, expectedBytes: expectedBytes) { (bytes: ByteBuffer) async throws(FetchError) in
            var bytes = bytes
            let dropped = Int(min(skip, Int64(bytes.readableBytes)))
            bytes.moveReaderIndex(forwardBy: dropped)
            skip -= Int64(dropped)
            if bytes.readableBytes > 0 { try await consume(bytes) }
        }
    }

    /// Reads the whole file and keeps `range`: correct for any origin; HTTP origins
    /// override it with a range request.
    public func download(
        _ path: String,
        range: Range<Int64>,
        fileBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError) {
        try ByteRanges.check(range, fileBytes: fileBytes, path: path)
        guard !range.isEmpty else { return }
        var position: Int64 = 0
        try await download(path, expectedBytes: fileBytes) { (bytes: ByteBuffer) async throws(FetchError) in
            let start = position
            position += Int64(bytes.readableBytes)
            let from = max(range.lowerBound, start), to = min(range.upperBound, position)
            guard from < to, let slice = bytes.getSlice(at: bytes.readerIndex + Int(from - start), length: Int(to - from)) else { return }
            try await consume(slice)
        }
        guard position >= range.upperBound else {
            throw FetchError(.corrupt, "\(path) ended at byte \(position), before the end of the range \(range)")
        }
    }

    /// Reading a range reads the whole file.
    public var servesRanges: Bool { false }

    /// No ETags: the file is read again and always reported modified.
    public func conditionalData(at path: String, limit: ByteCount, etag: String?) async throws(FetchError) -> ConditionalFetch {
        .modified(try await data(at: path, limit: limit), etag: nil)
    }

    /// False when every server behind this origin failed to answer its last request.
    public var isOnline: Bool {
        let records = health
        return records.isEmpty || records.contains { $0.isOnline }
    }
}

extension Origin {
    /// Reads a small file whole through `download`, which already enforces the limit.
    public func data(at path: String, limit: ByteCount) async throws(FetchError) -> Data {
        var result = Data()
        try await download(path, expectedBytes: limit) { (bytes: ByteBuffer) throws(FetchError) in
            result.append(contentsOf: bytes.readableBytesView)
        }
        return result
    }
}

/// Turns the user's `<origin>` argument into an `Origin`.
public enum OriginLocator {
    /// Accepts a dist dir path, a `file://` URL, or an `http://`/`https://` URL of a dist dir.
    /// `options` apply to HTTP(S) origins, except `fetchDeadline`, which bounds file origins too.
    public static func origin(
        for argument: String,
        options: OriginOptions = OriginOptions(),
        logger: Logger = Logger(label: "odrfs.origin")
    ) throws(FetchError) -> any Origin {
        let lowered = argument.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            return try HTTPOrigin(url: argument, options: options, logger: logger)
        }
        var path = argument
        if lowered.hasPrefix("file://") {
            guard let url = URL(string: argument), url.isFileURL, !url.path.isEmpty else {
                throw FetchError(.invalidOrigin, "not a valid file:// URL: \(argument)")
            }
            path = url.path
        }
        return try FileOrigin(root: path, fetchDeadline: options.fetchDeadline)
    }

    /// How `argument` is shown in messages without creating the origin: an HTTP(S) URL
    /// without credentials or query, a path as given.
    public static func displayName(for argument: String) -> String {
        let lowered = argument.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            return (try? OriginAddress(argument))?.displayName ?? "the origin"
        }
        return argument
    }
}
