import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ODRFSCore

/// The answer to a conditional GET.
public enum ConditionalFetch: Sendable {
    /// 304: the file has not changed since the ETag given.
    case notModified
    /// The file, and its ETag if the origin sent a strong one.
    case modified(Data, etag: String?)
}

extension HTTPOrigin {
    /// GETs a small file (the manifest) with `If-None-Match: etag`: a periodic update check
    /// costs the origin and every HTTP cache on the way one 304 while nothing changed. One
    /// attempt, no retries: the next check is the retry.
    public func conditionalData(at path: String, limit: ByteCount, etag: String?) async throws(FetchError) -> ConditionalFetch {
        let shown = address.displayURL(for: path)
        var headers = HTTPHeaders()
        if let etag { headers.add(name: "If-None-Match", value: etag) }
        let response: HTTPClientResponse
        do {
            response = try await execute(address.url(for: path), headers: headers,
                                         deadline: NIODeadline.now() + TimeAmount(fetchDeadline), shown: shown)
        } catch {
            switch error {
            case .fatal(let failure): throw failure
            case .transient(let reason, _), .unreachable(let reason): throw FetchError(.unreachable, "cannot fetch \(shown): \(reason)")
            }
        }
        switch response.status.code {
        case 304:
            return .notModified
        case 200:
            var data = Data()
            do {
                for try await chunk in response.body {
                    guard data.count + chunk.readableBytes <= limit.value else {
                        throw FetchError(.corrupt, "\(shown) is larger than the \(limit.value) bytes allowed")
                    }
                    data.append(contentsOf: chunk.readableBytesView)
                }
            } catch let error as FetchError {
                throw error
            } catch {
                throw FetchError(.unreachable, "cannot fetch \(shown): \(error)")
            }
            let tag = response.headers.first(name: "ETag").flatMap { $0.hasPrefix("W/") ? nil : $0 }
            return .modified(data, etag: tag)
        case 404, 410:
            throw FetchError(.notFound, "\(shown) is not on the origin (HTTP \(response.status.code))")
        case 401, 403:
            throw FetchError(.unauthorized, "origin refused \(shown) (HTTP \(response.status.code))")
        default:
            throw FetchError(.unreachable, "origin answered HTTP \(response.status.code) \(response.status.reasonPhrase) for \(shown)")
        }
    }
}
