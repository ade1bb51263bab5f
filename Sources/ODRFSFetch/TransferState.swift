import Foundation
import AsyncHTTPClient
import NIOHTTP1
import ODRFSCore

/// What one fetch has achieved across its attempts, and how each new response must be read
/// so that `consume` sees every byte exactly once and in order.
struct TransferState {
    /// Bytes already handed to `consume`.
    var delivered: Int64 = 0
    /// The first response's strong ETag (or Last-Modified), sent as If-Range on resume.
    var validator: String?
    /// False once the origin answered a range request with other bytes: later attempts ask
    /// for the whole file and skip what was delivered.
    var rangeUsable = true
    /// How to read a response body.
    struct BodyPlan {
        /// Leading bytes of the body that `consume` already has.
        var skip: Int64
        /// Body bytes the headers promise, if they say.
        var length: Int64?
        /// Nothing left to read: the file was already complete.
        var isComplete = false
    }

    /// The headers for the next attempt: a range from `delivered` when resuming.
    var requestHeaders: HTTPHeaders {
        var headers = HTTPHeaders()
        if delivered > 0, rangeUsable {
            headers.add(name: "Range", value: "bytes=\(delivered)-")
            if let validator { headers.add(name: "If-Range", value: validator) }
        }
        return headers
    }

    /// Checks a response's status and headers against what was asked and what the manifest
    /// allows; `url` is the display URL for messages.
    mutating func plan(for response: HTTPClientResponse, expectedBytes: ByteCount,
                       url: String, sentToken: Bool) throws(AttemptFailure) -> BodyPlan {
        let headers = response.headers
        let length = headers.first(name: "Content-Length").flatMap { Int64($0) }
        switch response.status.code {
        case 200:
            if let length, length > expectedBytes.value {
                throw .fatal(FetchError(.corrupt, "\(url) is \(length) bytes on the origin, more than the \(expectedBytes.value) expected"))
            }
            rememberValidator(headers)
            return BodyPlan(skip: delivered, length: length)
        case 206:
            guard let range = headers.first(name: "Content-Range").flatMap(ContentRange.init(header:)),
                  range.first == delivered else {
                rangeUsable = false
                throw .transient("origin answered a range request for bytes \(delivered)- with other bytes")
            }
            if let total = range.total, total > expectedBytes.value {
                throw .fatal(FetchError(.corrupt, "\(url) is \(total) bytes on the origin, more than the \(expectedBytes.value) expected"))
            }
            // An unrequested "bytes 0-9223372036854775807/*" must not reach the length
            // arithmetic: a range is only usable inside the file the manifest describes.
            guard range.last < expectedBytes.value else {
                throw .fatal(FetchError(.corrupt, "\(url): origin sent bytes \(range.first)-\(range.last), beyond the \(expectedBytes.value) bytes expected"))
            }
            rememberValidator(headers)
            // first ≥ 0 and last < expectedBytes: cannot overflow.
            return BodyPlan(skip: 0, length: range.last - range.first + 1)
        case 416 where delivered > 0:
            // The previous attempt got every byte but not the end of the response.
            if headers.first(name: "Content-Range").flatMap(ContentRange.unsatisfiedTotal) == delivered {
                return BodyPlan(skip: 0, length: 0, isComplete: true)
            }
            throw .fatal(FetchError(.corrupt, "\(url) on the origin is shorter than the \(delivered) bytes already received"))
        case 404, 410:
            throw .fatal(FetchError(.notFound, "\(url) is not on the origin (HTTP \(response.status.code))"))
        case 401, 403:
            let hint = sentToken ? "the token from --token-file was refused" : "the origin wants a token; pass --token-file"
            throw .fatal(FetchError(.unauthorized, "origin refused \(url) (HTTP \(response.status.code)): \(hint)"))
        case 408, 425, 429, 500...599:
            let wait = headers.first(name: "Retry-After").flatMap { RetryAfter.delay(from: $0, now: Date()) }
            throw .transient("HTTP \(response.status.code) \(response.status.reasonPhrase)", retryAfter: wait)
        default:
            throw .fatal(FetchError(.unreachable, "origin answered HTTP \(response.status.code) \(response.status.reasonPhrase) for \(url)"))
        }
    }

    private mutating func rememberValidator(_ headers: HTTPHeaders) {
        guard validator == nil else { return }
        // A weak ETag may not be used in If-Range (RFC 9110 §13.1.5); fall back to the date.
        if let tag = headers.first(name: "ETag"), !tag.hasPrefix("W/") {
            validator = tag
        } else {
            validator = headers.first(name: "Last-Modified")
        }
    }
}
