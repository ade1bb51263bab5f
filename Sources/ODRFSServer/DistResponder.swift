import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix

/// Answers every request of the embedded origin: bearer auth, path checks, conditional
/// requests, single and multiple byte ranges, and one access log line per request.
///
/// A hand-written responder rather than Hummingbird's `FileMiddleware`, which sends weak
/// ETags (so If-Range can never match), reads `bytes=-N` as the first N+1 bytes, answers a
/// malformed Range with 416 instead of the whole file, and follows symlinks out of the root.
struct DistResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let directory: DistDirectory
    let token: AccessToken?
    let logger: Logger

    func respond(to request: Request, context: Context) async throws -> Response {
        let target = request.head.path ?? ""
        // The query is neither used nor logged: a CDN-style signed URL would carry a secret there.
        let path = String(target.prefix { $0 != "?" })
        let entry = AccessLogEntry(logger: logger, method: request.method.rawValue, path: path,
                                   range: request.headers[.range])

        guard request.method == .get || request.method == .head else {
            var headers = HTTPFields()
            headers[.allow] = "GET, HEAD"
            return entry.finish(Self.message(.methodNotAllowed, "only GET and HEAD are served", headers: headers))
        }
        if let token {
            let authorization = request.headers[.authorization]
            guard token.accepts(authorization: authorization) else {
                var headers = HTTPFields()
                headers[.wwwAuthenticate] = authorization == nil
                    ? "Bearer realm=\"odrfs\""
                    : "Bearer realm=\"odrfs\", error=\"invalid_token\""
                return entry.finish(Self.message(.unauthorized, "a valid bearer token is required", headers: headers),
                                    note: authorization == nil ? "no token" : "wrong token")
            }
        }

        let file: ServedFile
        do {
            file = try await open(path)
        } catch {
            var headers = HTTPFields()
            let status: HTTPResponse.Status = switch error.status {
            case .badRequest: .badRequest
            case .forbidden: .forbidden
            case .notFound: .notFound
            case .unavailable: .serviceUnavailable
            }
            if status == .serviceUnavailable {
                // Out of descriptors or memory: the file may well exist; ask the client to come back.
                headers[.retryAfter] = "1"
            }
            return entry.finish(Self.message(status, status.reasonPhrase.lowercased(), headers: headers), note: error.reason)
        }
        return respond(with: file, to: request, path: path, entry: entry)
    }

    /// realpath, lstat, open and fstat may block on the disk (or forever on a hung network
    /// filesystem under the dist dir): on NIO's thread pool, where the body's `pread`s run
    /// too, never on the cooperative pool that runs this handler.
    private func open(_ path: String) async throws(DistDirectory.Refusal) -> ServedFile {
        let directory = self.directory
        let opened: Result<ServedFile, DistDirectory.Refusal>
        do {
            opened = try await NIOThreadPool.singleton.runIfActive {
                Result { () throws(DistDirectory.Refusal) in try directory.open(target: path) }
            }
        } catch {
            opened = .failure(DistDirectory.Refusal(status: .unavailable, reason: "the I/O thread pool is stopped: \(error)"))
        }
        return try opened.get()
    }

    private func respond(with file: ServedFile, to request: Request, path: String, entry: AccessLogEntry) -> Response {
        var headers = HTTPFields()
        headers[.eTag] = file.entityTag
        headers[.lastModified] = file.lastModified
        headers[.acceptRanges] = "bytes"
        let contentType = path.hasSuffix(".json") ? "application/json" : "application/octet-stream"
        headers[.contentType] = contentType
        // Packs and indexes are content addressed: their URL names their bytes forever.
        headers[.cacheControl] = path.hasPrefix("/packs/") || path.hasPrefix("/index/")
            ? "public, max-age=31536000, immutable" : "no-cache"

        if ConditionalRequest.isNotModified(request.headers, file: file) {
            return entry.finish(Response(status: .notModified, headers: headers))
        }
        var range = ByteRangeRequest.whole
        if request.method == .get, ConditionalRequest.rangeApplies(request.headers, file: file) {
            range = ByteRangeRequest(header: request.headers[.range], fileSize: file.size)
        }
        switch range {
        case .unsatisfiable:
            headers[.contentRange] = "bytes */\(file.size)"
            return entry.finish(Response(status: .rangeNotSatisfiable, headers: headers))
        case .partial(let bytes):
            headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(file.size)"
            headers[.contentLength] = String(bytes.count)
            return Response(status: .partialContent, headers: headers,
                            body: file.body(range: bytes) { sent, error in
                                entry.log(status: .partialContent, bytes: sent, error: error)
                            })
        case .multipart(let ranges):
            let layout = ServedFile.MultipartLayout(ranges: ranges, fileSize: file.size, contentType: contentType,
                                                    boundary: ServedFile.makeBoundary())
            headers[.contentType] = layout.contentTypeHeader
            headers[.contentLength] = String(layout.contentLength)
            return Response(status: .partialContent, headers: headers,
                            body: file.multipartBody(layout) { sent, error in
                                entry.log(status: .partialContent, bytes: sent, error: error)
                            })
        case .whole:
            headers[.contentLength] = String(file.size)
            guard request.method == .get, file.size > 0 else {
                return entry.finish(Response(status: .ok, headers: headers))
            }
            return Response(status: .ok, headers: headers,
                            body: file.body(range: 0...(file.size - 1)) { sent, error in
                                entry.log(status: .ok, bytes: sent, error: error)
                            })
        }
    }

    private static func message(_ status: HTTPResponse.Status, _ text: String, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        let body = ByteBuffer(string: text + "\n")
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.contentLength] = String(body.readableBytes)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }
}
