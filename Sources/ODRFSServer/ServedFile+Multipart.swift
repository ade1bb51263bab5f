import Foundation
import Hummingbird
import NIOCore

extension ServedFile {
    /// The framing of a `multipart/byteranges` answer (RFC 9110 §14.6): each part a
    /// delimiter, its `Content-Type` and `Content-Range`, a blank line and the bytes; then
    /// the closing delimiter. Computed up front so that Content-Length is exact.
    struct MultipartLayout: Sendable {
        let boundary: String
        /// The part headers (with the delimiter before them) and the bytes each is followed by.
        let parts: [(head: String, range: ClosedRange<Int64>)]
        let closing: String
        /// Every byte of the body: framing plus the ranges.
        let contentLength: Int64

        /// `ranges` come from ``ByteRangeRequest`` (at most 64, inside a file of `fileSize`
        /// bytes), so the sums stay far from overflow.
        init(ranges: [ClosedRange<Int64>], fileSize: Int64, contentType: String, boundary: String) {
            self.boundary = boundary
            parts = ranges.map { range in
                ("\r\n--\(boundary)\r\nContent-Type: \(contentType)\r\n"
                    + "Content-Range: bytes \(range.lowerBound)-\(range.upperBound)/\(fileSize)\r\n\r\n", range)
            }
            closing = "\r\n--\(boundary)--\r\n"
            contentLength = parts.reduce(Int64(closing.utf8.count)) { $0 + Int64($1.head.utf8.count) + Int64($1.range.count) }
        }

        /// The header value announcing this body.
        var contentTypeHeader: String { "multipart/byteranges; boundary=\(boundary)" }
    }

    /// A fresh boundary: 24 random hex digits, which no file's bytes are checked against
    /// (the parts are length-delimited by Content-Range; the boundary only has to be unique
    /// enough for clients that search for it).
    static func makeBoundary() -> String {
        var random = SystemRandomNumberGenerator()
        return "odrfs-" + (0..<3).map { _ in String(random.next() as UInt32, radix: 16) }.joined()
            + String(random.next() as UInt64, radix: 16)
    }

    /// A body that streams `layout`: each part's head, then its bytes read like a single
    /// range (256 KiB `pread`s, back-pressured), then the closing delimiter. Reports the
    /// body bytes written and the error, if the client went away (for the access log).
    func multipartBody(_ layout: MultipartLayout,
                       completion: @escaping @Sendable (Int64, (any Error)?) -> Void) -> ResponseBody {
        ResponseBody(contentLength: Int(layout.contentLength)) { writer in
            var sent: Int64 = 0
            do {
                for part in layout.parts {
                    try await writer.write(ByteBuffer(string: part.head))
                    sent += Int64(part.head.utf8.count)
                    var offset = part.range.lowerBound
                    while offset <= part.range.upperBound {
                        let wanted = Int(min(Int64(Self.chunkSize), part.range.upperBound - offset + 1))
                        let chunk = try await self.read(at: offset, count: wanted)
                        try await writer.write(chunk)
                        offset += Int64(chunk.readableBytes)
                        sent += Int64(chunk.readableBytes)
                    }
                }
                try await writer.write(ByteBuffer(string: layout.closing))
                sent += Int64(layout.closing.utf8.count)
                try await writer.finish(nil)
            } catch {
                completion(sent, error)
                throw error
            }
            completion(sent, nil)
        }
    }
}
