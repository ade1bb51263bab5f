import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A test origin (shared by the fetch and mount tests) whose answer to each request is scripted, per path and per attempt, to
/// produce the failures a real network and real servers produce.
public final class FaultOrigin: Sendable {
    /// What the origin does with one request.
    public enum Behaviour: Sendable {
        /// A well-behaved server: honours `Range` (206) unless If-Range is stale; several
        /// ranges get one `multipart/byteranges` 206.
        case serve
        /// Always the whole file with 200, whatever Range says.
        case serveIgnoringRange
        /// As `.serve` (keep-alive), then the connection is closed 50 ms later: a server or
        /// proxy whose keep-alive timeout passed.
        case serveThenClose
        /// An empty response with this status.
        case status(Int)
        /// Headers promising the whole answer, `n` body bytes, then a clean close (FIN).
        case truncate(after: Int)
        /// Headers, `n` body bytes, then a reset (RST) once the client has read them.
        case reset(after: Int)
        /// Headers, then silence.
        case stall
        /// Honours `Range` as `.serve` does, sends the first `n` bytes of the answer, then
        /// silence: a server that trickles and stalls on every attempt.
        case trickle(after: Int)
        /// Honours `Range` as `.serve` does, then one byte of the answer every
        /// `milliseconds`, for ever: never silent long enough for a read timeout.
        case drip(milliseconds: Int)
        /// No answer at all, not even headers: a proxy whose upstream never answers.
        case silent
        /// The whole file with 200 whatever Range says, `n` body bytes, then silence: a CDN
        /// that stalls again in the part a resuming client already has.
        case stallIgnoringRange(after: Int)
        /// 302 to this absolute URL.
        case redirect(String)
        /// An empty response with this status and a `Retry-After` header.
        case busy(status: Int, retryAfter: String)
        /// 206 with this `Content-Range` header (whatever was asked) and the whole file as body.
        case partialContent(contentRange: String)
        /// 206 with this Content-Type and body, whatever was asked (a hostile multipart answer).
        case rawPartial(contentType: String, body: [UInt8])
        /// Honours `Range` as `.serve` does, sends the first `n` bytes of the answer, then the
        /// rest once the test opens `gate`: a download held in flight for as long as a test needs.
        case pause(after: Int, gate: FaultGate)
    }

    /// One request as the origin saw it.
    public struct Seen: Sendable {
        public var path: String
        public var range: String?
        public var ifRange: String?
        public var authorization: String?
        /// The request-target as sent: a path, or an absolute URL when a client treated this
        /// server as its forward proxy (then `path` is the URL's path).
        public var target: String = ""
        public var host: String?
        public var proxyAuthorization: String?
        public var at = ContinuousClock.now
    }

    /// The path of a request-target, also of an absolute-form one (`http://host:port/path`,
    /// what a forward proxy receives), without the query.
    static func path(of target: String) -> String {
        var rest = Substring(target)
        if let scheme = rest.range(of: "://"), rest[..<scheme.lowerBound].allSatisfy(\.isLetter) {
            rest = rest[scheme.upperBound...]
            rest = rest[(rest.firstIndex(of: "/") ?? rest.endIndex)...]
        }
        return String(rest.prefix { $0 != "?" })
    }

    public static let entityTag = "\"v1\""

    private struct State {
        var files: [String: [UInt8]] = [:]
        var scripts: [String: [Behaviour]] = [:]
        var streamScripts: [String: [Behaviour]] = [:]
        var seen: [Seen] = []
        var sent: [String: Int] = [:]
        var connections = 0
    }

    private let state = Mutex(State())
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    public let port: Int

    private init(group: MultiThreadedEventLoopGroup, channel: any Channel) {
        self.group = group
        self.channel = channel
        self.port = channel.localAddress?.port ?? 0
    }

    /// Starts listening on 127.0.0.1 with a kernel-chosen port.
    public static func start() async throws -> FaultOrigin {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let box = Mutex<FaultOrigin?>(nil)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let origin = box.withLock { $0! }
                    origin.state.withLock { $0.connections += 1 }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(FaultHandler(origin: origin))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let origin = FaultOrigin(group: group, channel: channel)
        box.withLock { $0 = origin }
        return origin
    }

    /// Closes the listener and every connection (stalled ones included).
    public func stop() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    public func setFile(_ path: String, _ bytes: [UInt8]) {
        state.withLock { $0.files[path] = bytes }
    }

    /// Every regular file under `directory` (a dist dir), at its path relative to it.
    public func setFiles(from directory: String) throws {
        let manager = FileManager.default
        guard let walker = manager.enumerator(atPath: directory) else { throw CocoaError(.fileReadNoSuchFile) }
        while let relative = walker.nextObject() as? String {
            let full = directory + "/" + relative
            var isDirectory: ObjCBool = false
            guard manager.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            setFile("/" + relative, Array(try Data(contentsOf: URL(fileURLWithPath: full))))
        }
    }

    /// Behaviours for the next requests of `path`, in order; afterwards `.serve`.
    public func script(_ path: String, _ behaviours: [Behaviour]) {
        state.withLock { $0.scripts[path] = behaviours }
    }

    /// Behaviours for the next *streams* of `path` (requests without `Range`, or with an
    /// open-ended one: see ``streams(of:)``), in order; ranges fetched alongside a stream
    /// (which may reach the origin first) are served as `script` says.
    public func scriptStreams(_ path: String, _ behaviours: [Behaviour]) {
        state.withLock { $0.streamScripts[path] = behaviours }
    }

    public var seen: [Seen] { state.withLock { $0.seen } }

    /// Connections accepted so far.
    public var connections: Int { state.withLock { $0.connections } }

    /// Body bytes answered with `.serve` for `path` (whole files and ranges).
    public func bytesSent(of path: String) -> Int {
        state.withLock { $0.sent[path] ?? 0 }
    }

    fileprivate func recordSent(_ count: Int, for head: HTTPRequestHead) {
        let path = Self.path(of: head.uri)
        state.withLock { $0.sent[path, default: 0] += count }
    }

    public func requests(of path: String) -> [Seen] {
        seen.filter { $0.path == path }
    }

    /// The requests of `path` that download it from a point to its end (no `Range`, or an
    /// open-ended one: a resume): the pack downloads, not the ranges fetched ahead of them.
    public func streams(of path: String) -> [Seen] {
        requests(of: path).filter { $0.range.map { $0.hasSuffix("-") } ?? true }
    }

    /// Records the request and says what to do and with which bytes.
    fileprivate func take(_ head: HTTPRequestHead) -> (Behaviour, [UInt8]?) {
        let path = Self.path(of: head.uri)
        return state.withLock { state in
            state.seen.append(Seen(path: path, range: head.headers.first(name: "Range"),
                                   ifRange: head.headers.first(name: "If-Range"),
                                   authorization: head.headers.first(name: "Authorization"),
                                   target: head.uri, host: head.headers.first(name: "Host"),
                                   proxyAuthorization: head.headers.first(name: "Proxy-Authorization")))
            var behaviour = Behaviour.serve
            let isStream = head.headers.first(name: "Range").map { $0.hasSuffix("-") } ?? true
            if isStream, var script = state.streamScripts[path], !script.isEmpty {
                behaviour = script.removeFirst()
                state.streamScripts[path] = script
            } else if var script = state.scripts[path], !script.isEmpty {
                behaviour = script.removeFirst()
                state.scripts[path] = script
            }
            return (behaviour, state.files[path])
        }
    }
}

/// Answers requests on one connection as the origin's script says.
private final class FaultHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let origin: FaultOrigin
    private var head: HTTPRequestHead?

    init(origin: FaultOrigin) {
        self.origin = origin
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let (behaviour, file) = origin.take(head)
        if case .silent = behaviour { return }
        guard let file else {
            return send(status: .notFound, headers: [], body: [], context: context)
        }
        if case .status(let code) = behaviour {
            return send(status: HTTPResponseStatus(statusCode: code), headers: [], body: [], context: context)
        }
        if case .busy(let code, let retryAfter) = behaviour {
            return send(status: HTTPResponseStatus(statusCode: code), headers: [("Retry-After", retryAfter)], body: [], context: context)
        }
        if case .redirect(let location) = behaviour {
            return send(status: .found, headers: [("Location", location)], body: [], context: context)
        }
        if case .partialContent(let contentRange) = behaviour {
            return send(status: .partialContent, headers: [("Content-Range", contentRange)], body: file, context: context)
        }
        if case .rawPartial(let contentType, let raw) = behaviour {
            return send(status: .partialContent, headers: [("Content-Type", contentType)], body: raw, context: context)
        }
        var status = HTTPResponseStatus.ok
        var body = file[...]
        // File bytes in the body (a multipart body also has framing): what `bytesSent` counts.
        var payload: Int?
        var headers: [(String, String)] = [("ETag", FaultOrigin.entityTag)]
        let ifRange = head.headers.first(name: "If-Range")
        if case .serveIgnoringRange = behaviour {
        } else if case .stallIgnoringRange = behaviour {
        } else if let range = head.headers.first(name: "Range"), range.hasPrefix("bytes="), range.contains(","),
                  let parts = Self.multipart(range, file: file), ifRange == nil || ifRange == FaultOrigin.entityTag {
            status = .partialContent
            body = parts.body[...]
            payload = parts.payload
            headers.append(("Content-Type", "multipart/byteranges; boundary=\(Self.boundary)"))
        } else if let range = head.headers.first(name: "Range"), range.hasPrefix("bytes="),
                  case let bounds = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false), bounds.count == 2,
                  let start = Int(bounds[0]), start < file.count,
                  ifRange == nil || ifRange == FaultOrigin.entityTag {
            // `bytes=a-` (a resume) or `bytes=a-b` (an update's span); b past the end is cut there.
            let last = bounds[1].isEmpty ? file.count - 1 : min(Int(bounds[1]) ?? file.count - 1, file.count - 1)
            status = .partialContent
            body = file[start...max(start, last)]
            headers.append(("Content-Range", "bytes \(start)-\(max(start, last))/\(file.count)"))
        }
        switch behaviour {
        case .truncate(let count), .reset(let count):
            writeHead(status: status, headers: headers, length: body.count, context: context)
            var buffer = context.channel.allocator.buffer(capacity: count)
            buffer.writeBytes(body.prefix(count))
            let written = context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))))
            let channel = context.channel
            let reset = if case .reset = behaviour { true } else { false }
            // Close once the bytes reached the socket (NIO drops pending writes on close) and the
            // client had time to read them: AsyncHTTPClient discards body bytes it buffered but
            // had not yet handed out when it sees the connection die, and a RST can make the
            // kernel discard unread data. The offsets the tests expect are then exact.
            written.whenComplete { _ in
                channel.eventLoop.scheduleTask(in: .milliseconds(200)) {
                    // SO_LINGER 0 makes close() send RST instead of FIN.
                    let provider = channel as? any SocketOptionProvider
                    let ready = reset ? provider?.setSoLinger(linger(l_onoff: 1, l_linger: 0)) : nil
                    _ = (ready ?? channel.eventLoop.makeSucceededVoidFuture()).flatMap { channel.close() }
                }
            }
        case .stall:
            writeHead(status: status, headers: headers, length: body.count, context: context)
            context.flush()
        case .drip(let milliseconds):
            writeHead(status: status, headers: headers, length: body.count, context: context)
            context.flush()
            let channel = context.channel
            let bytes = Array(body)
            @Sendable func drip(_ index: Int) {
                guard index < bytes.count, channel.isActive else { return }
                channel.eventLoop.scheduleTask(in: .milliseconds(Int64(milliseconds))) {
                    var buffer = channel.allocator.buffer(capacity: 1)
                    buffer.writeInteger(bytes[index])
                    channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer)), promise: nil)
                    drip(index + 1)
                }
            }
            drip(0)
        case .pause(let count, let gate):
            writeHead(status: status, headers: headers, length: body.count, context: context)
            var head = context.channel.allocator.buffer(capacity: count)
            head.writeBytes(body.prefix(count))
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(head))), promise: nil)
            let channel = context.channel
            let rest = Array(body.dropFirst(count))
            gate.whenOpen {
                channel.eventLoop.execute {
                    guard channel.isActive else { return }
                    var buffer = channel.allocator.buffer(capacity: rest.count)
                    buffer.writeBytes(rest)
                    channel.write(HTTPServerResponsePart.body(.byteBuffer(buffer)), promise: nil)
                    channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: nil)
                }
            }
        case .stallIgnoringRange(let count), .trickle(let count):
            writeHead(status: status, headers: headers, length: body.count, context: context)
            var buffer = context.channel.allocator.buffer(capacity: count)
            buffer.writeBytes(body.prefix(count))
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        case .serveThenClose:
            origin.recordSent(payload ?? body.count, for: head)
            send(status: status, headers: headers, body: Array(body), context: context)
            let channel = context.channel
            channel.eventLoop.scheduleTask(in: .milliseconds(50)) { channel.close(promise: nil) }
        default:
            origin.recordSent(payload ?? body.count, for: head)
            send(status: status, headers: headers, body: Array(body), context: context)
        }
    }

    static let boundary = "FAULT-BOUNDARY"

    /// A `multipart/byteranges` body for "bytes=a-b,c-d,…" (each `a-b`, inside the file, in
    /// the order asked; no merging), and the file bytes in it; nil for anything else.
    static func multipart(_ header: String, file: [UInt8]) -> (body: [UInt8], payload: Int)? {
        var body: [UInt8] = []
        var payload = 0
        for spec in header.dropFirst(6).split(separator: ",") {
            let bounds = spec.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let first = Int(bounds[0]), let last = Int(bounds[1]),
                  first <= last, last < file.count else { return nil }
            body += Array("\r\n--\(boundary)\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes \(first)-\(last)/\(file.count)\r\n\r\n".utf8)
            body += file[first...last]
            payload += last - first + 1
        }
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        return (body, payload)
    }

    private func writeHead(status: HTTPResponseStatus, headers: [(String, String)], length: Int, context: ChannelHandlerContext) {
        var fields = HTTPHeaders(headers)
        fields.replaceOrAdd(name: "Content-Length", value: String(length))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: fields))), promise: nil)
    }

    private func send(status: HTTPResponseStatus, headers: [(String, String)], body: [UInt8], context: ChannelHandlerContext) {
        writeHead(status: status, headers: headers, length: body.count, context: context)
        if !body.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: body.count)
            buffer.writeBytes(body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

/// A gate a test opens once: what waits on it (``FaultOrigin/Behaviour/pause(after:gate:)``)
/// runs then, or at once if it is open already.
public final class FaultGate: Sendable {
    private let state = Mutex<(open: Bool, waiting: [@Sendable () -> Void])>((false, []))

    public init() {}

    public func open() {
        let waiting = state.withLock { state -> [@Sendable () -> Void] in
            state.open = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for body in waiting { body() }
    }

    func whenOpen(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if !state.open { state.waiting.append(body) }
            return state.open
        }
        if now { body() }
    }
}
