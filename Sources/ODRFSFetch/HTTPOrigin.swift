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
/// - Transient failures (refused, reset, timeouts, 5xx, short bodies) are retried by the
///   origin's ``RetryPolicy`` (shared by every transfer below): exponential backoff and jitter until `fetchDeadline` passes without progress (new bytes
///   at `lowSpeedLimit` or faster, across attempts: a trickle is no progress); then
///   the fetch fails with `.unreachable`, naming the URL, the attempts and the last error.
///   404/410 fail at once with `.notFound`, 401/403 with `.unauthorized`, a file larger
///   than expected with `.corrupt`.
/// - When no connection can be made at all (refused, no route, DNS failure, connect
///   timeout) the fetch fails with `.unreachable` after `unreachableAfter` (2.5 s) instead:
///   nobody is there, and an open must not wait half a minute to learn it. The connection
///   pool's own reconnect loop is off so that these failures reach this loop at once.
/// - An update's spans of one pack go in one request, `Range: bytes=a-b,c-d,…`, answered
///   `multipart/byteranges` (`HTTPOrigin+MultiRange.swift`, parsed by `MultipartByteRanges`);
///   a server that answers such a request with the whole file is asked one range at a time
///   from then on.
/// - Every response head and every connection failure is recorded in ``healthRecord``.
/// - Redirects are followed by hand (at most ``maxRedirects`` hops), each target validated
///   exactly as an origin URL is (``OriginAddress/redirectTarget(_:from:)``): a `Location`
///   is input from a server, and one naming port 99999 used to kill the daemon inside
///   swift-nio.
/// - A bearer token goes to the origin's own scheme, host and port only, never along a
///   redirect elsewhere. Neither the token nor the URL's query appears in logs or errors.
///
/// Two `HTTPClient`s (each with a bounded connection pool) per origin: the main one, and an
/// HTTP/1.1 one for ranges readers wait for (``RequestLane``). Call ``shutdown()`` before
/// dropping the origin; `deinit` starts a shutdown as a safety net.
public final class HTTPOrigin: ResumableOrigin {
    let address: OriginAddress
    let client: HTTPClient
    /// Ranges a reader waits for (``RequestLane/reader``): HTTP/1.1, connections of their own.
    let readerClient: HTTPClient
    /// Where http:// requests go when a proxy is set for them (``send(_:deadline:)``).
    let forwardProxy: ForwardProxyClient?
    /// "Bearer <token>": never logged.
    let authorization: String?
    /// How every transfer of this origin retries: backoff, `--fetch-timeout` without
    /// progress at `--low-speed-limit`, Retry-After, the short budget when nobody is there.
    let retry: RetryPolicy
    let logger: Logger
    /// Reachability, round-trip time and errors of this server, for status and probes.
    public let healthRecord: OriginHealth
    private let isShutDown = Mutex(false)
    /// Set once the server answered a multi-range request with the whole file: it does not
    /// do them, so later multi-range downloads send one range request per range instead.
    let ignoresMultipleRanges = Mutex(false)

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
        let connectTimeout = TimeAmount(min(deadline, options.connectTimeout))
        let readTimeout = TimeAmount(max(.milliseconds(500), min(.seconds(10), deadline / 3)))
        configuration.timeout = .init(connect: connectTimeout, read: readTimeout)
        configuration.connectionPool = .init(idleTimeout: .seconds(60),
                                             concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, options.maxConnections))
        // Connection failures come back to `download` at once, which retries them on its own
        // (short) budget; the pool would otherwise retry until the whole deadline passed.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.proxy = try Self.tunnelProxy(for: address, options: options)
        // HTTP/2: windows that do not hold a response back on a long link (HTTP2Windows).
        configuration.http2ConnectionDebugInitializer = HTTP2Windows.open
        // Before the client: an HTTPClient dropped without a shutdown traps.
        self.forwardProxy = try Self.forwardProxy(for: address, options: options, connectTimeout: connectTimeout, readTimeout: readTimeout)
        self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        var readerConfiguration = configuration
        readerConfiguration.httpVersion = .http1Only
        readerConfiguration.http2ConnectionDebugInitializer = nil
        self.readerClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: readerConfiguration)
        self.retry = RetryPolicy(options)
        self.logger = logger
        self.healthRecord = OriginHealth(url: address.displayName)
    }

    deinit {
        if !isShutDown.withLock({ $0 }) {
            // HTTPClient traps in debug builds if dropped while running; the shutdown
            // keeps it alive until its connections are closed.
            _ = client.shutdown()
            _ = readerClient.shutdown()
        }
    }

    public var displayName: String { address.displayName }

    public var health: [OriginHealth] { [healthRecord] }

    public func shutdown() async {
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        forwardProxy?.shutdown()
        try? await client.shutdown()
        try? await readerClient.shutdown()
    }

    /// Resumes with `Range: bytes=<offset>-` (a mirror taking over another's download).
    public func download(
        _ path: String,
        from offset: Int64,
        expectedBytes: ByteCount,
        into consume: (ByteBuffer) async throws(FetchError) -> Void
    ) async throws(FetchError) {
        let shown = address.displayURL(for: path)
        var transfer = TransferState()
        transfer.delivered = max(0, min(offset, expectedBytes.value))
        var run = RetryRun(retry)
        let (deadline, limit) = (retry.deadline, retry.lowSpeedLimit.value)
        try await run.perform(fetching: shown, logger: logger) { (progress: inout ProgressMark) async throws(AttemptFailure) in
            do throws(AttemptFailure) {
                try await attempt(path, expectedBytes: expectedBytes, transfer: &transfer, progress: &progress, consume: consume)
            } catch {
                switch error {
                case .fatal: break
                case .transient(let text, _): healthRecord.recordError(text)
                case .unreachable(let text): healthRecord.recordUnreachable(text)
                }
                throw error
            }
        } giveUp: { why, reason, attempts in
            switch why {
            case .unreachable(let lasted):
                // Logged once by whoever wanted the file (the open, the mount); retries were debug.
                return FetchError(.unreachable, "cannot reach the origin for \(shown): \(reason) (\(attempts) attempt(s) in \(RetryPolicy.seconds(lasted)))")
            case .retryAfterBeyondDeadline(let retryAfter):
                logger.error("fetch failed", metadata: ["fetch.url": "\(shown)", "fetch.attempts": "\(attempts)", "fetch.error": "\(reason)"])
                return FetchError(.unreachable, "cannot fetch \(shown): the origin answered \(reason) and asked to retry after \(retryAfter), beyond the fetch timeout of \(deadline) (--fetch-timeout) after \(attempts) attempt(s)")
            case .noProgress, .tooManyFailures:
                logger.error("fetch failed", metadata: ["fetch.url": "\(shown)", "fetch.attempts": "\(attempts)", "fetch.error": "\(reason)"])
                return FetchError(.unreachable, "cannot fetch \(shown): no progress for \(deadline) (--fetch-timeout; a transfer slower than \(limit) bytes/s, --low-speed-limit, is none) after \(attempts) attempt(s), \(transfer.delivered) bytes received; last error: \(reason)")
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

extension HTTPOrigin {
    /// `--fetch-timeout`: how long a transfer may go without progress.
    var fetchDeadline: Duration { retry.deadline }
    /// Below this many bytes per second a transfer is no progress (`--low-speed-limit`).
    var lowSpeedLimit: ByteCount { retry.lowSpeedLimit }
}
