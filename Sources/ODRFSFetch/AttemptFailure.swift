import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// How one HTTP attempt of a fetch ended when it did not deliver the whole file: either
/// final (the error the caller gets) or worth another attempt after a backoff.
enum AttemptFailure: Error {
    /// Retrying cannot help (404, 401, corrupt size, cancellation, TLS trust, bad URL).
    case fatal(FetchError)
    /// The network or the server had a bad moment (refused, reset, timeout, 5xx, short body).
    /// `retryAfter` is how long the origin asked us to wait (`Retry-After` on 429 or 503).
    case transient(String, retryAfter: Duration? = nil)
    /// No connection could be made (refused, no route, DNS failure, connect timeout): the
    /// server is not there. Retried only briefly (``OriginOptions/unreachableAfter``), so
    /// that an open fails fast when the network or the origin is down.
    case unreachable(String)

    /// Sorts an error thrown by the HTTP client or the body stream.
    static func classify(_ error: any Error, url: String) -> AttemptFailure {
        if error is CancellationError || Task.isCancelled {
            return .fatal(FetchError(.cancelled, "fetch of \(url) was cancelled"))
        }
        if let error = error as? HTTPClientError {
            if [.invalidURL, .emptyHost, .emptyScheme].contains(error) {
                return .fatal(FetchError(.invalidOrigin, "cannot fetch \(url): \(error)"))
            }
            if error == .connectTimeout { return .unreachable("connect timeout") }
            return .transient(String(describing: error))
        }
        if let reason = connectionFailure(error) { return .unreachable(reason) }
        // An untrusted or mismatched certificate does not heal by retrying for half a minute.
        if error is NIOSSLError || error is NIOSSLExtraError {
            return .fatal(FetchError(.unreachable, "TLS with the origin failed for \(url): \(error); if its certificate comes from a private CA, pass --ca-file"))
        }
        return .transient(String(describing: error))
    }
}

extension AttemptFailure {
    /// Errnos of a connect(2) that found nobody: the host or network is not there.
    private static let unreachableErrnos: Set<Int32> = [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EHOSTDOWN, ENETDOWN]

    /// A short reason if `error` says that no connection could be made at all (as opposed
    /// to a connection that broke), else nil.
    static func connectionFailure(_ error: any Error) -> String? {
        switch error {
        case let error as NIOConnectionError:
            // Happy Eyeballs: DNS failures and every address's connect error.
            if let dns = error.dnsAError ?? error.dnsAAAAError { return "cannot resolve \(error.host): \(dns)" }
            let reasons = error.connectionErrors.map { "\($0.target): \(describe($0.error))" }
            return "cannot connect to \(error.host):\(error.port)" + (reasons.isEmpty ? "" : " (" + reasons.joined(separator: ", ") + ")")
        case ChannelError.connectTimeout:
            return "connect timeout"
        case let error as IOError where unreachableErrnos.contains(error.errnoCode):
            return describe(error)
        default:
            return nil
        }
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        return String(describing: error)
    }
}

extension AttemptFailure {
    /// An answer that is not the bytes asked for (`asked` names them, e.g. "a range of URL"):
    /// 404/410 and 401/403 are final, 408, 425, 429 and 5xx worth another attempt (after
    /// the origin's `Retry-After`), anything else final.
    static func unexpected(_ response: HTTPClientResponse, url: String, asked: String) -> AttemptFailure {
        let code = response.status.code
        switch code {
        case 404, 410:
            return .fatal(FetchError(.notFound, "\(url) is not on the origin (HTTP \(code))"))
        case 401, 403:
            return .fatal(FetchError(.unauthorized, "origin refused \(url) (HTTP \(code))"))
        case 408, 425, 429, 500...599:
            let wait = response.headers.first(name: "Retry-After").flatMap { RetryAfter.delay(from: $0, now: Date()) }
            return .transient("HTTP \(code) \(response.status.reasonPhrase)", retryAfter: wait)
        default:
            return .fatal(FetchError(.unreachable, "origin answered HTTP \(code) for \(asked)"))
        }
    }
}
