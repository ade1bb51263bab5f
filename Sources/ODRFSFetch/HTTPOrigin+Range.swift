import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ODRFSCore

extension HTTPOrigin {
    /// A range costs one request for its bytes.
    public var servesRanges: Bool { true }

    /// Streams bytes `range` of the file at `path` (whose size the manifest says is
    /// `fileBytes`) to `consume`, in order, with one `Range: bytes=a-b` request. An origin
    /// that ignores the range and answers 200 is read up to the range and no further. A
    /// failed attempt is retried by the origin's ``RetryPolicy`` (at most three in all,
    /// no resume within the range).
    /// Used by updates to fetch only the spans of a changed pack the cache lacks.
    public func download(
        _ path: String,
        range: Range<Int64>,
        fileBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError) {
        try ByteRanges.check(range, fileBytes: fileBytes, path: path)
        guard !range.isEmpty else { return }
        let shown = address.displayURL(for: path)
        // The origin's policy, at most three attempts: a range is part of an update, which
        // downloads the pack whole when its ranges fail.
        var run = RetryRun(retry.limitingFailuresInARow(to: 3))
        let (deadline, limit) = (retry.deadline, retry.lowSpeedLimit.value)
        try await run.perform(fetching: shown, logger: logger, retrying: "range fetch failed; retrying") { (progress: inout ProgressMark) async throws(AttemptFailure) in
            var delivered: Int64 = 0
            do throws(AttemptFailure) {
                try await rangeAttempt(path, range: range, fileBytes: fileBytes, shown: shown, delivered: &delivered,
                                       progress: &progress, consume: consume)
            } catch {
                // Bytes already handed on cannot be taken back: only a clean failure is retried.
                switch error {
                case .transient(let reason, _) where delivered > 0, .unreachable(let reason) where delivered > 0:
                    throw .fatal(FetchError(.unreachable, "range \(range) of \(shown) broke off: \(reason)"))
                default: throw error
                }
            }
        } giveUp: { why, reason, attempts in
            switch why {
            case .tooManyFailures, .unreachable:
                return FetchError(.unreachable, "cannot fetch range \(range) of \(shown) after \(attempts) attempts: \(reason)")
            case .retryAfterBeyondDeadline(let wait):
                return FetchError(.unreachable, "cannot fetch range \(range) of \(shown): the origin answered \(reason) and asked to retry after \(wait), beyond the fetch timeout of \(deadline) (--fetch-timeout)")
            case .noProgress:
                return FetchError(.unreachable, "cannot fetch range \(range) of \(shown): no progress for \(deadline) (--fetch-timeout; a transfer slower than \(limit) bytes/s, --low-speed-limit, is none); last error: \(reason)")
            }
        }
    }

    private func rangeAttempt(_ path: String, range: Range<Int64>, fileBytes: ByteCount, shown: String, delivered: inout Int64,
                              progress: inout ProgressMark, consume: (ByteBuffer) async throws(FetchError) -> Void) async throws(AttemptFailure) {
        var headers = HTTPHeaders()
        headers.add(name: "Range", value: "bytes=\(range.lowerBound)-\(range.upperBound - 1)")
        let response = try await execute(address.url(for: path), headers: headers,
                                         deadline: NIODeadline.now() + TimeAmount(fetchDeadline), shown: shown)
        var skip: Int64
        switch response.status.code {
        case 206:
            guard let answered = response.headers.first(name: "Content-Range").flatMap(ContentRange.init(header:)),
                  answered.first == range.lowerBound, answered.last == range.upperBound - 1 else {
                throw .fatal(FetchError(.corrupt, "\(shown) answered the range \(range) with other bytes"))
            }
            skip = 0
        case 200:
            skip = range.lowerBound
        default:
            throw .unexpected(response, url: shown, asked: "a range of \(shown)")
        }
        let wanted = Int64(range.count)
        do {
            for try await var chunk in response.body {
                if progress.hasLapsed(fetchDeadline) {
                    throw AttemptFailure.transient("slower than \(lowSpeedLimit.value) bytes/s (--low-speed-limit) for \(fetchDeadline)")
                }
                if skip > 0 {
                    let dropped = Int(min(skip, Int64(chunk.readableBytes)))
                    chunk.moveReaderIndex(forwardBy: dropped)
                    skip -= Int64(dropped)
                }
                let take = Int(min(Int64(chunk.readableBytes), wanted - delivered))
                guard take > 0 else { continue }
                if take < chunk.readableBytes { chunk = chunk.getSlice(at: chunk.readerIndex, length: take) ?? chunk }
                progress.credit(Int64(take))
                let handing = ContinuousClock.now
                do throws(FetchError) { try await consume(chunk) } catch { throw AttemptFailure.fatal(error) }
                progress.excuse(ContinuousClock.now - handing)
                delivered += Int64(take)
                // A whole-file answer: stop reading once the range is in.
                if delivered == wanted { break }
            }
        } catch let failure as AttemptFailure {
            throw failure
        } catch {
            throw AttemptFailure.classify(error, url: shown)
        }
        guard delivered == wanted else { throw .transient("body ended after \(delivered) of \(wanted) bytes") }
    }
}
