import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// One access log line per request: method, path, status, bytes sent, the Range asked for
/// and the duration, as swift-log metadata under a constant message.
///
/// Streamed bodies log when the last byte is written (or the client goes away), so `bytes`
/// is what was really sent and `duration_ms` covers the transfer. Headers are never logged
/// wholesale: the Authorization header carries the token.
struct AccessLogEntry: Sendable {
    let logger: Logger
    let method: String
    let path: String
    let range: String?
    let start = ContinuousClock.now

    /// Logs a response without a streamed body and returns it.
    func finish(_ response: Response, note: String? = nil) -> Response {
        log(status: response.status, bytes: Int64(response.body.contentLength ?? 0), error: nil, note: note)
        return response
    }

    func log(status: HTTPResponse.Status, bytes: Int64, error: (any Error)?, note: String? = nil) {
        let elapsed = ContinuousClock.now - start
        var metadata: Logger.Metadata = [
            "http.method": .string(method),
            "http.path": .string(path),
            "http.status": .stringConvertible(status.code),
            "http.bytes": .stringConvertible(bytes),
            "http.duration_ms": .string(String(format: "%.1f", Double(elapsed.components.seconds) * 1000
                + Double(elapsed.components.attoseconds) / 1e15)),
        ]
        if let range { metadata["http.range"] = .string(range) }
        if let note { metadata["http.note"] = .string(note) }
        if let error { metadata["http.error"] = .string("\(error)") }
        logger.info("request", metadata: metadata)
    }
}
