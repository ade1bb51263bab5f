import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ODRFSCore
import ServiceLifecycle

/// The embedded origin behind `odrfs serve`: a dist dir over HTTP/1.1 for `odrfs mount`
/// or any other client.
///
/// It serves the dist dir's files, nothing else, with what a resuming fetcher and a CDN in
/// front need: byte ranges (206, 416; several ranges in one `multipart/byteranges` 206, at
/// most 64 parts after merging overlapping and adjacent ones, see `ByteRangeRequest`), strong ETags and Last-Modified with
/// If-None-Match, If-Modified-Since and If-Range, exact Content-Length, HEAD. Bodies stream
/// from disk in 256 KiB reads whatever the file size. With a token file, every request must
/// carry `Authorization: Bearer <token>` (401 otherwise). Each request leaves one `request`
/// log line at info level; the token is never logged. ``ConnectionLimits`` bound the
/// connections held at once and close idle or stalled ones, so no client can exhaust the
/// server's descriptors.
///
/// It is a swift-service-lifecycle `Service`: run it in a `ServiceGroup` for signal handling
/// and graceful shutdown (in-flight responses finish), or call ``run()`` in a task and
/// cancel it. Pass port 0 to let the kernel choose; `onListening` learns the bound port.
public struct OriginServer: Service {
    public let distDirectory: String
    public let host: String
    public let port: Int
    private let application: Application<DistResponder>

    /// - Parameters:
    ///   - distDirectory: the directory made by `odrfs build` (must hold manifest.json).
    ///   - tokenFile: a file whose first line is the bearer token clients must send; nil for none.
    ///   - limits: the connection cap and the idle timeout.
    ///   - onListening: called once the socket is bound, with the actual port.
    public init(
        distDirectory: String,
        host: String = "127.0.0.1",
        port: Int = 8080,
        tokenFile: String? = nil,
        limits: ConnectionLimits = ConnectionLimits(),
        logger: Logger,
        onListening: @escaping @Sendable (_ port: Int) async -> Void = { _ in }
    ) throws(OriginServerError) {
        let directory = try DistDirectory(path: distDirectory, excluding: tokenFile.map { [$0] } ?? [])
        var manifest = stat()
        guard stat(directory.root + "/" + Manifest.fileName, &manifest) == 0, (manifest.st_mode & S_IFMT) == S_IFREG else {
            throw OriginServerError(.distDirectory, "\(distDirectory) has no manifest.json; pass the dist dir made by `odrfs build`")
        }
        let token = try tokenFile.map { (path: String) throws(OriginServerError) in try AccessToken(contentsOfFile: path) }
        self.distDirectory = distDirectory
        self.host = host
        self.port = port
        let responder = DistResponder(directory: directory, token: token, logger: logger)
        let idle = limits.idleTimeAmount
        self.application = Application(
            responder: responder,
            server: .http1(configuration: HTTP1Channel.Configuration(
                additionalChannelHandlers: [IdleStateHandler(writeTimeout: idle), StalledWriteCloser()],
                idleTimeout: idle
            )),
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: port), serverName: nil,
                availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections, logger: logger)
            ),
            onServerRunning: { channel in
                await onListening(channel.localAddress?.port ?? port)
            },
            logger: logger
        )
    }

    /// Serves until the task is cancelled or the enclosing `ServiceGroup` shuts down gracefully.
    public func run() async throws {
        try await application.run()
    }
}
