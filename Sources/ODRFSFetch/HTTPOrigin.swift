import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOSSL
import ODRFSCore
import Synchronization

/// An origin that is a dist dir on an HTTP(S) server: nginx, a CDN, an object store's
/// HTTP endpoint, or `odrfs serve`.
///
/// How a download goes:
/// - The body streams to `consume` chunk by chunk as it arrives; nothing is buffered whole.
/// - If the connection drops or the body ends short, the next attempt asks for
///   `Range: bytes=<done>-` with `If-Range: <ETag of the first response>` and delivers only
///   the new bytes. A server that answers 200 instead (no range support, or the file
///   changed) has the bytes already delivered skipped, so `consume` never sees a byte twice;
///   if the file did change, the caller's verification rejects the result.
/// - Transient failures (refused, reset, timeouts, 5xx, short bodies) are retried with
///   exponential backoff and jitter until `fetchDeadline` passes without a new byte; then
///   the fetch fails with `.unreachable`, naming the URL, the attempts and the last error.
///   404/410 fail at once with `.notFound`, 401/403 with `.unauthorized`, a file larger
///   than expected with `.corrupt`.
/// - A bearer token goes to the origin's own scheme, host and port only, never along a
///   redirect elsewhere. Neither the token nor the URL's query appears in logs or errors.
///
/// One `HTTPClient` (with a bounded connection pool) per origin. Call ``shutdown()``
/// before dropping the origin; `deinit` starts a shutdown as a safety net.
public final class HTTPOrigin: Origin {
    let address: OriginAddress
    let client: HTTPClient
    /// "Bearer <token>": never logged.
    let authorization: String?
    let fetchDeadline: Duration
    let backoff: RetryBackoff
    let logger: Logger
    private let isShutDown = Mutex(false)

    static let maxRedirects = 5

    /// - Parameter url: the dist dir's base URL, http or https, without credentials.
    public init(url: String, options: OriginOptions = OriginOptions(), logger: Logger) throws(FetchError) {
        self.address = try OriginAddress(url)
        self.authorization = try options.tokenFile.map { (path: String) throws(FetchError) in
            "Bearer " + (try Self.readToken(path))
        }
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = try Self.tlsConfiguration(caFile: options.caFile)
        // Redirects are followed by hand so that the token never leaves the origin.
        configuration.redirectConfiguration = .disallow
        configuration.decompression = .disabled
        // A read stall is cut after a third of the deadline so that a fresh connection gets a try.
        let deadline = options.fetchDeadline
        configuration.timeout = .init(connect: TimeAmount(min(deadline, .seconds(10))),
                                      read: TimeAmount(max(.milliseconds(500), min(.seconds(10), deadline / 3))))
        configuration.connectionPool = .init(idleTimeout: .seconds(60),
                                             concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, options.maxConnections))
        self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        self.fetchDeadline = options.fetchDeadline
        self.backoff = RetryBackoff()
        self.logger = logger
    }

    deinit {
        if !isShutDown.withLock({ $0 }) {
            // HTTPClient traps in debug builds if dropped while running; the shutdown
            // keeps it alive until its connections are closed.
            _ = client.shutdown()
        }
    }

    public var displayName: String { address.displayName }

    public func shutdown() async {
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        try? await client.shutdown()
    }

    public func download(
        _ path: String,
        expectedBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError) {
        let shown = address.displayURL(for: path)
        var transfer = TransferState()
        var attempts = 0
        var failuresInARow = 0
        var random = SystemRandomNumberGenerator()
        while true {
            attempts += 1
            let before = transfer.delivered
            do {
                try await attempt(path, expectedBytes: expectedBytes, transfer: &transfer, consume: consume)
                return
            } catch {
                let reason: String
                let retryAfter: Duration?
                switch error {
                case .fatal(let failure): throw failure
                case .transient(let text, let wait): (reason, retryAfter) = (text, wait)
                }
                // A download that moved forward starts its backoff afresh.
                failuresInARow = transfer.delivered > before ? 1 : failuresInARow + 1
                let delay = max(backoff.delay(afterFailure: failuresInARow, using: &random), retryAfter ?? .zero)
                if ContinuousClock.now + delay >= transfer.lastProgress + fetchDeadline {
                    logger.error("fetch failed", metadata: ["fetch.url": "\(shown)", "fetch.attempts": "\(attempts)",
                                                           "fetch.error": "\(reason)"])
                    if let retryAfter, retryAfter == delay {
                        throw FetchError(.unreachable, "cannot fetch \(shown): the origin answered \(reason) and asked to retry after \(retryAfter), beyond the fetch timeout of \(fetchDeadline) (--fetch-timeout) after \(attempts) attempt(s)")
                    }
                    throw FetchError(.unreachable, "cannot fetch \(shown): no progress for \(fetchDeadline) after \(attempts) attempt(s); last error: \(reason)")
                }
                logger.notice("fetch attempt failed; retrying", metadata: [
                    "fetch.url": "\(shown)", "fetch.attempt": "\(attempts)", "fetch.error": "\(reason)",
                    "fetch.offset": "\(transfer.delivered)", "fetch.retry_in": "\(delay)",
                ])
                do {
                    try await Task.sleep(for: delay)
                } catch {
                    throw FetchError(.cancelled, "fetch of \(shown) was cancelled")
                }
            }
        }
    }

    /// The first line of the token file, trimmed; the message never includes the contents.
    static func readToken(_ path: String) throws(FetchError) -> String {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw FetchError(.invalidOrigin, "cannot read token file \(path): \((error as NSError).localizedDescription)")
        }
        let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let token = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else {
            throw FetchError(.invalidOrigin, "token file \(path) is empty; put the token on its first line")
        }
        return token
    }

    /// The system trust store, plus the certificates of `caFile` when given.
    static func tlsConfiguration(caFile: String?) throws(FetchError) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            do {
                let certificates = try NIOSSLCertificate.fromPEMFile(caFile)
                guard !certificates.isEmpty else {
                    throw FetchError(.invalidOrigin, "CA file \(caFile) holds no PEM certificate")
                }
                tls.additionalTrustRoots = [.certificates(certificates)]
            } catch let error as FetchError {
                throw error
            } catch {
                throw FetchError(.invalidOrigin, "cannot load CA file \(caFile): \(error)")
            }
        }
        return tls
    }
}
