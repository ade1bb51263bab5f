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
    /// failed attempt is retried (at most three in all, no resume within the range).
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
        var lastReason = ""
        var progress = ProgressMark(lowSpeedLimit: lowSpeedLimit)
        for attempt in 1...3 {
            var delivered: Int64 = 0
            do {
                try await rangeAttempt(path, range: range, fileBytes: fileBytes, shown: shown, delivered: &delivered,
                                       progress: &progress, consume: consume)
                return
            } catch {
                switch error {
                case .fatal(let failure): throw failure
                case .transient(let reason, _), .unreachable(let reason):
                    // Bytes already handed on cannot be taken back: only a clean failure is retried.
                    guard delivered == 0 else { throw FetchError(.unreachable, "range \(range) of \(shown) broke off: \(reason)") }
                    lastReason = reason
                    logger.notice("range fetch failed; retrying", metadata: ["fetch.url": "\(shown)", "fetch.attempt": "\(attempt)",
                                                                             "fetch.error": "\(reason)"])
                    do { try await Task.sleep(for: .milliseconds(200 * attempt)) } catch {
                        throw FetchError(.cancelled, "fetch of \(shown) was cancelled")
                    }
                }
            }
        }
        throw FetchError(.unreachable, "cannot fetch range \(range) of \(shown) after 3 attempts: \(lastReason)")
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
