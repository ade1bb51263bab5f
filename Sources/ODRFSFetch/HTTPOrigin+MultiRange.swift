import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ODRFSCore

extension HTTPOrigin {
    /// Streams bytes `ranges` of the file at `path` (`fileBytes` long) to `consume` with
    /// ONE request per 64 ranges: `Range: bytes=a-b,c-d,…`, answered by a
    /// `multipart/byteranges` 206 read with ``MultipartByteRanges`` (strictly: every part
    /// exactly one of the ranges asked for, each once). Other answers a server may give:
    /// - a single-range 206 covering every range (it merged them): the ranges' bytes are
    ///   kept, the response read no further than the last of them;
    /// - 200, the whole file (no multi-range support): read up to the last range, keeping
    ///   the ranges' bytes, when what lies between them is small (``maximumUnwantedBytes``)
    ///   — the bytes are already on their way; otherwise the body is dropped and the
    ///   ranges fetched one request each. The origin remembers it
    ///   (``ignoresMultipleRanges``); later calls send one range request per range.
    /// A failed attempt (the body broke off, 5xx) is retried by the origin's ``RetryPolicy``,
    /// each time asking only for the bytes not yet delivered, so `consume` never sees a byte
    /// twice: up to three times in a row without a new byte, and while the fetch deadline has not passed since the last
    /// progress at the low-speed limit (``ProgressMark``: a server that sends a few bytes and
    /// resets on every attempt is no progress). A malformed body fails as `.corrupt`, never traps.
    public func download(
        _ path: String,
        ranges: [Range<Int64>],
        fileBytes: ByteCount,
        into consume: RangeSink
    ) async throws(FetchError) {
        let wanted = try ByteRanges(ranges, fileBytes: fileBytes, path: path)
        if wanted.ranges.count < 2 || ignoresMultipleRanges.withLock({ $0 }) {
            return try await downloadEachRange(path, ranges: wanted.ranges, fileBytes: fileBytes, into: consume)
        }
        for batch in wanted.batches(of: ByteRanges.maximumPerRequest) {
            try await downloadBatch(path, remaining: ByteRanges(batch, fileBytes: fileBytes, path: path), fileBytes: fileBytes, into: consume)
        }
    }

    /// A whole-file answer (200) to a multi-range request is read through to the last
    /// range only while the bytes nobody asked for stay below this or the bytes asked for;
    /// past that, one range request per range costs less than reading on (an S3-like
    /// origin answering a 256 MiB pack whole for two small ranges near its end).
    static let maximumUnwantedBytes: Int64 = 1 << 20

    /// One request's ranges, retried from what is still missing.
    private func downloadBatch(_ path: String, remaining: ByteRanges, fileBytes: ByteCount, into consume: RangeSink) async throws(FetchError) {
        let shown = address.displayURL(for: path)
        var remaining = remaining
        // The origin's policy, with the multi-range rule: three failures in a row without a new byte.
        var run = RetryRun(retry.limitingFailuresInARow(to: 3))
        let (deadline, limit) = (retry.deadline, retry.lowSpeedLimit.value)
        var fellBack = false
        try await run.perform(fetching: shown, logger: logger, retrying: "multi-range fetch failed; retrying the rest") { (progress: inout ProgressMark) async throws(AttemptFailure) in
            while !remaining.isEmpty {
                if ignoresMultipleRanges.withLock({ $0 }) {
                    fellBack = true
                    return
                }
                try await multiRangeAttempt(path, fileBytes: fileBytes, shown: shown, remaining: &remaining,
                                            progress: &progress, consume: consume)
                if ignoresMultipleRanges.withLock({ $0 }) { continue }
                guard remaining.isEmpty else { throw AttemptFailure.transient("the response ended before every range arrived") }
            }
        } giveUp: { why, reason, attempts in
            switch why {
            case .tooManyFailures, .unreachable:
                return FetchError(.unreachable, "cannot fetch \(remaining.ranges.count) range(s) of \(shown) after \(attempts) attempts: \(reason)")
            case .retryAfterBeyondDeadline, .noProgress:
                return FetchError(.unreachable, "cannot fetch \(remaining.ranges.count) range(s) of \(shown): no progress for \(deadline) (--fetch-timeout; a transfer slower than \(limit) bytes/s, --low-speed-limit, is none); last error: \(reason)")
            }
        }
        if fellBack {
            try await downloadEachRange(path, ranges: remaining.ranges, fileBytes: fileBytes, into: consume)
        }
    }

    /// One request for `remaining`; what arrives is handed on and removed from `remaining`.
    private func multiRangeAttempt(_ path: String, fileBytes: ByteCount, shown: String, remaining: inout ByteRanges,
                                   progress: inout ProgressMark, consume: RangeSink) async throws(AttemptFailure) {
        let asked = remaining
        var headers = HTTPHeaders()
        headers.add(name: "Range", value: asked.headerValue)
        let response = try await execute(address.url(for: path), headers: headers,
                                         deadline: NIODeadline.now() + TimeAmount(fetchDeadline), shown: shown)
        switch response.status.code {
        case 206:
            if let boundary = response.headers.first(name: "Content-Type").flatMap(MultipartByteRanges.boundary(fromContentType:)) {
                var parser = MultipartByteRanges(boundary: boundary, requested: asked.ranges, fileBytes: fileBytes.value)
                try await readMultipart(response, parser: &parser, shown: shown, remaining: &remaining, progress: &progress, consume: consume)
                return
            }
            // One range for all: it must hold every byte asked for, inside the file.
            guard let answered = response.headers.first(name: "Content-Range").flatMap(ContentRange.init(header:)),
                  answered.total == nil || answered.total == fileBytes.value, answered.last < fileBytes.value,
                  let first = asked.ranges.first, let last = asked.ranges.last,
                  answered.first <= first.lowerBound, answered.last >= last.upperBound - 1 else {
                throw .fatal(FetchError(.corrupt, "\(shown) answered a request for \(asked.ranges.count) ranges with other bytes"))
            }
            try await readWhole(response, from: answered.first, shown: shown, remaining: &remaining, progress: &progress, consume: consume)
        case 200:
            if asked.ranges.count > 1 {
                ignoresMultipleRanges.withLock { $0 = true }
                logger.notice("origin ignores multi-range requests; asking for one range at a time from now on",
                              metadata: ["fetch.url": "\(shown)"])
                // The ranges asked for, not their span, bound what is worth reading here;
                // past that the body is dropped and the caller goes one range at a time.
                let unwanted = (asked.ranges.last?.upperBound ?? 0) - asked.byteCount
                guard unwanted <= max(asked.byteCount, Self.maximumUnwantedBytes) else { return }
            }
            try await readWhole(response, from: 0, shown: shown, remaining: &remaining, progress: &progress, consume: consume)
        default:
            throw .unexpected(response, url: shown, asked: "ranges of \(shown)")
        }
    }

    /// A `multipart/byteranges` body, read until its closing delimiter.
    private func readMultipart(_ response: HTTPClientResponse, parser: inout MultipartByteRanges, shown: String,
                               remaining: inout ByteRanges, progress: inout ProgressMark, consume: RangeSink) async throws(AttemptFailure) {
        do {
            for try await chunk in response.body {
                try checkProgress(progress)
                let pieces: [MultipartByteRanges.Piece]
                do {
                    pieces = try chunk.withUnsafeReadableBytes { (bytes) throws(MultipartByteRanges.Failure) in try parser.feed(bytes) }
                } catch {
                    throw AttemptFailure.fatal(FetchError(.corrupt, "\(shown) sent a malformed multipart/byteranges body: \(error)"))
                }
                for piece in pieces {
                    guard let slice = chunk.getSlice(at: chunk.readerIndex + piece.bytes.lowerBound, length: piece.bytes.count) else { continue }
                    progress.credit(Int64(piece.bytes.count))
                    let handing = ContinuousClock.now
                    do throws(FetchError) { try await consume(piece.offset, slice) } catch { throw AttemptFailure.fatal(error) }
                    progress.excuse(ContinuousClock.now - handing)
                    remaining.remove(piece.offset..<(piece.offset + Int64(piece.bytes.count)))
                }
                if parser.isComplete { return }
            }
        } catch let failure as AttemptFailure {
            throw failure
        } catch {
            throw AttemptFailure.classify(error, url: shown)
        }
        throw .transient("the multipart body ended before its closing delimiter")
    }

    /// A body holding the file from byte `start` on (a 200, or one 206 range covering
    /// them all): hands on the bytes still wanted and stops after the last of them.
    private func readWhole(_ response: HTTPClientResponse, from start: Int64, shown: String,
                           remaining: inout ByteRanges, progress: inout ProgressMark, consume: RangeSink) async throws(AttemptFailure) {
        let wanted = remaining
        guard let end = wanted.ranges.last?.upperBound else { return }
        var position = start
        do {
            for try await chunk in response.body {
                try checkProgress(progress)
                let at = position
                // The position never passes `end` (the loop stops there), so this cannot overflow.
                position += Int64(chunk.readableBytes)
                for piece in wanted.pieces(ofChunkAt: at, count: chunk.readableBytes) {
                    guard let slice = chunk.getSlice(at: chunk.readerIndex + piece.indexes.lowerBound, length: piece.indexes.count) else { continue }
                    progress.credit(Int64(piece.indexes.count))
                    let handing = ContinuousClock.now
                    do throws(FetchError) { try await consume(piece.offset, slice) } catch { throw AttemptFailure.fatal(error) }
                    progress.excuse(ContinuousClock.now - handing)
                    remaining.remove(piece.offset..<(piece.offset + Int64(piece.indexes.count)))
                }
                if position >= end { return }
            }
        } catch let failure as AttemptFailure {
            throw failure
        } catch {
            throw AttemptFailure.classify(error, url: shown)
        }
    }

    /// Fails the attempt once the fetch has gone `fetchDeadline` without progress at the
    /// low-speed limit: checked as bytes arrive, since a server that sends a byte every few
    /// seconds never trips the read timeout.
    private func checkProgress(_ progress: ProgressMark) throws(AttemptFailure) {
        if progress.hasLapsed(fetchDeadline) {
            throw .transient("slower than \(lowSpeedLimit.value) bytes/s (--low-speed-limit) for \(fetchDeadline)")
        }
    }
}
