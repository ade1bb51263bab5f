import AsyncHTTPClient
import NIOSSL

/// How one HTTP attempt of a fetch ended when it did not deliver the whole file: either
/// final (the error the caller gets) or worth another attempt after a backoff.
enum AttemptFailure: Error {
    /// Retrying cannot help (404, 401, corrupt size, cancellation, TLS trust, bad URL).
    case fatal(FetchError)
    /// The network or the server had a bad moment (refused, reset, timeout, 5xx, short body).
    /// `retryAfter` is how long the origin asked us to wait (`Retry-After` on 429 or 503).
    case transient(String, retryAfter: Duration? = nil)

    /// Sorts an error thrown by the HTTP client or the body stream.
    static func classify(_ error: any Error, url: String) -> AttemptFailure {
        if error is CancellationError || Task.isCancelled {
            return .fatal(FetchError(.cancelled, "fetch of \(url) was cancelled"))
        }
        if let error = error as? HTTPClientError {
            if [.invalidURL, .emptyHost, .emptyScheme].contains(error) {
                return .fatal(FetchError(.invalidOrigin, "cannot fetch \(url): \(error)"))
            }
            return .transient(String(describing: error))
        }
        // An untrusted or mismatched certificate does not heal by retrying for half a minute.
        if error is NIOSSLError || error is NIOSSLExtraError {
            return .fatal(FetchError(.unreachable, "TLS with the origin failed for \(url): \(error); if its certificate comes from a private CA, pass --ca-file"))
        }
        return .transient(String(describing: error))
    }
}
