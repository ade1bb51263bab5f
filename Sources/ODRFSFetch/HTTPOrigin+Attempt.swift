import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ODRFSCore

extension HTTPOrigin {
    /// One HTTP request of a fetch: resumes from `transfer.delivered`, streams the new bytes
    /// to `consume` and records them in `transfer` and `progress`, even when it then fails.
    func attempt(
        _ path: String,
        expectedBytes: ByteCount,
        transfer: inout TransferState,
        progress: inout ProgressMark,
        consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(AttemptFailure) {
        let shown = address.displayURL(for: path)
        if transfer.delivered > 0 {
            logger.info("resuming download", metadata: ["fetch.url": "\(shown)", "fetch.offset": "\(transfer.delivered)",
                                                        "fetch.range": "\(transfer.rangeUsable)"])
        }
        let remaining = progress.instant + fetchDeadline - ContinuousClock.now
        let deadline = NIODeadline.now() + TimeAmount(max(remaining, .milliseconds(100)))
        let response = try await execute(address.url(for: path), headers: transfer.requestHeaders,
                                          deadline: deadline, shown: shown)
        let plan = try transfer.plan(for: response, expectedBytes: expectedBytes, url: shown,
                                     sentToken: authorization != nil)
        if plan.isComplete { return }
        if plan.skip > 0 {
            logger.notice("origin ignored the range; skipping bytes already received",
                          metadata: ["fetch.url": "\(shown)", "fetch.skip": "\(plan.skip)"])
        }
        var skip = plan.skip
        var received: Int64 = 0
        do {
            for try await var chunk in response.body {
                // Checked as bytes arrive, not only when an attempt fails: a server that sends
                // a byte every few seconds never trips the read timeout.
                if progress.hasLapsed(fetchDeadline) {
                    throw AttemptFailure.transient("slower than \(lowSpeedLimit.value) bytes/s (--low-speed-limit) for \(fetchDeadline)")
                }
                received += Int64(chunk.readableBytes)
                if skip > 0 {
                    let dropped = Int(min(skip, Int64(chunk.readableBytes)))
                    chunk.moveReaderIndex(forwardBy: dropped)
                    skip -= Int64(dropped)
                }
                guard chunk.readableBytes > 0 else { continue }
                // Progress is new bytes only, at the low-speed limit: a server that ignores Range
                // and stalls again in the part already received, or one that sends a trickle on
                // every attempt, would otherwise keep the fetch alive for ever.
                progress.credit(Int64(chunk.readableBytes))
                guard transfer.delivered + Int64(chunk.readableBytes) <= expectedBytes.value else {
                    throw AttemptFailure.fatal(FetchError(.corrupt, "\(shown) on the origin is larger than the \(expectedBytes.value) bytes expected"))
                }
                let count = Int64(chunk.readableBytes)
                let handing = ContinuousClock.now
                do throws(FetchError) { try await consume(chunk) } catch { throw AttemptFailure.fatal(error) }
                progress.excuse(ContinuousClock.now - handing)
                transfer.delivered += count
            }
        } catch let failure as AttemptFailure {
            throw failure
        } catch {
            throw AttemptFailure.classify(error, url: shown)
        }
        if skip > 0 {
            throw .fatal(FetchError(.corrupt, "\(shown) on the origin is shorter than the \(transfer.delivered) bytes already received"))
        }
        if let length = plan.length, received < length {
            throw .transient("body ended after \(received) of \(length) bytes")
        }
    }

    /// Sends the request, following up to ``maxRedirects`` redirects by hand so that the
    /// token goes only to the origin itself.
    func execute(_ url: String, headers: HTTPHeaders, deadline: NIODeadline,
                         shown: String) async throws(AttemptFailure) -> HTTPClientResponse {
        var current = url
        for _ in 0...Self.maxRedirects {
            var request = HTTPClientRequest(url: current)
            request.headers = headers
            if let authorization, address.isSameOrigin(current) {
                request.headers.replaceOrAdd(name: "Authorization", value: authorization)
            }
            let response: HTTPClientResponse
            let sent = ContinuousClock.now
            do {
                response = try await send(request, deadline: deadline)
            } catch {
                throw AttemptFailure.classify(error, url: shown)
            }
            healthRecord.recordResponse(status: Int(response.status.code), roundTrip: ContinuousClock.now - sent)
            guard [301, 302, 303, 307, 308].contains(response.status.code),
                  let location = response.headers.first(name: "Location")
            else {
                return response
            }
            current = try Self.redirectTarget(location, from: current, shown: shown)
        }
        throw .fatal(FetchError(.unreachable, "more than \(Self.maxRedirects) redirects for \(shown)"))
    }

    /// Where a redirect's `Location` leads, validated as an origin URL is
    /// (``OriginAddress/redirectTarget(_:from:)``); a refused target fails the fetch.
    static func redirectTarget(_ location: String, from current: String, shown: String) throws(AttemptFailure) -> String {
        do {
            return try OriginAddress.redirectTarget(location, from: current)
        } catch {
            throw .fatal(FetchError(error.kind, "\(shown): \(error.message)"))
        }
    }
}
