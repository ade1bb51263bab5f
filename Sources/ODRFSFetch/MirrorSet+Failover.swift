import Foundation
import NIOCore
import ODRFSCore

extension MirrorSet {
    /// A range costs one request when a server behind the set can serve one (the servers
    /// are still tried in health order, like any download).
    public var servesRanges: Bool { members.withLock { $0.contains { $0.origin.servesRanges } } }

    /// Bytes `range` of `path` from the healthiest server; when it fails, the rest of the
    /// range from the next (a range request from the first byte not yet delivered), as
    /// ``download(_:from:expectedBytes:into:)`` does for whole files.
    public func download(
        _ path: String,
        range: Range<Int64>,
        fileBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError) {
        try ByteRanges.check(range, fileBytes: fileBytes, path: path)
        var delivered: Int64 = 0
        try await withFailover(path) { (origin: any Origin, consumerFailed: inout Bool) async throws(FetchError) in
            let rest = (range.lowerBound + delivered)..<range.upperBound
            guard !rest.isEmpty else { return }
            try await origin.download(path, range: rest, fileBytes: fileBytes) { (bytes: ByteBuffer) async throws(FetchError) in
                do throws(FetchError) { try await consume(bytes) } catch {
                    consumerFailed = true
                    throw error
                }
                delivered += Int64(bytes.readableBytes)
            }
        }
    }

    /// The conditional GET from the healthiest server, moving on like a download when it
    /// fails. An ETag from one server sent to another only costs a full answer.
    public func conditionalData(at path: String, limit: ByteCount, etag: String?) async throws(FetchError) -> ConditionalFetch {
        try await withFailover(path) { (origin: any Origin, _: inout Bool) async throws(FetchError) -> ConditionalFetch in
            try await origin.conditionalData(at: path, limit: limit, etag: etag)
        }
    }

    /// Runs `operation` on the servers in ``candidates(for:now:)`` order until one succeeds, with
    /// the rules of ``download(_:from:expectedBytes:into:)``: a failure of the server moves
    /// on (recorded in its health), a failure of the consumer (`operation` sets its flag)
    /// ends the fetch and, if bad bytes, distrusts the server for `path`; while no server
    /// can be reached at all, the set goes round again for `unreachableAfter` (``RetryRun``).
    func withFailover<Result>(
        _ path: String,
        _ operation: (any Origin, inout Bool) async throws(FetchError) -> Result
    ) async throws(FetchError) -> Result {
        var lastError: FetchError?
        var servers = 0
        // The fetcher's retry policy, for going round again while nobody answers: backoff
        // within the set's unreachable budget, cancellation honoured.
        var run = RetryRun(RetryPolicy(unreachableAfter: unreachableAfter))
        return try await run.perform(fetching: path, logger: logger, retrying: "no server of the set answers; going round again") { (_: inout ProgressMark) async throws(AttemptFailure) -> Result in
            let (order, lastResort) = candidates(for: path)
            servers = order.count
            guard !order.isEmpty else {
                throw .fatal(lastError ?? FetchError(.corrupt, "every server sent bad bytes for \(path)"))
            }
            if lastResort, let last = order.last, lastError == nil {
                logger.notice("no trusted server answers for this file; trying the last one again that sent bad bytes", metadata: [
                    "fetch.path": "\(path)", "mirror": "\(members.withLock { $0[last] }.origin.displayName)",
                ])
            }
            var everyServerDown = true
            for (position, index) in order.enumerated() {
                let member = members.withLock { $0[index] }
                var consumerFailed = false
                do throws(FetchError) {
                    let result = try await operation(member.origin, &consumerFailed)
                    member.record.recordCompleted()
                    trust(index, for: path)
                    return result
                } catch {
                    if consumerFailed {
                        if error.kind == .corrupt { distrust(index, for: path, member: member, error: error) }
                        throw .fatal(error)
                    }
                    switch error.kind {
                    case .cancelled, .localIO, .noSpace, .readOnlyCache, .tooManyOpenFiles, .invalidOrigin, .unsupported: throw .fatal(error)
                    case .unreachable, .notFound, .unauthorized, .corrupt: break
                    }
                    if member.record.snapshot.isReachable != false {
                        everyServerDown = false
                        member.record.recordFailure(error.message)
                    }
                    lastError = error
                    if position + 1 < order.count {
                        let next = members.withLock { $0[order[position + 1]] }
                        logger.warning("mirror failed; moving the download to the next", metadata: [
                            "fetch.path": "\(path)", "mirror": "\(member.origin.displayName)",
                            "next": "\(next.origin.displayName)", "error": "\(error)",
                        ])
                    }
                }
            }
            let failure = lastError ?? FetchError(.unreachable, "no server for \(path)")
            guard everyServerDown else { throw .fatal(Self.allFailed(failure, servers: order.count)) }
            throw .unreachable(failure.message)
        } giveUp: { _, _, _ in
            Self.allFailed(lastError ?? FetchError(.unreachable, "no server for \(path)"), servers: servers)
        }
    }

    private static func allFailed(_ failure: FetchError, servers: Int) -> FetchError {
        FetchError(failure.kind, servers > 1 ? "all \(servers) servers failed; last: \(failure.message)" : failure.message)
    }
}
