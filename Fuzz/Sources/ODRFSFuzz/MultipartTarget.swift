import Foundation

/// A `multipart/byteranges` response body, as a mount reads it from an origin (and the
/// Content-Type its boundary comes from). The first byte picks the chunk size the body is
/// fed in (1…256), so that every split of a delimiter or header line across chunks is
/// tried; the rest is the body, answering a request for three fixed ranges of a
/// 1000-byte file with the boundary "B0UND".
///
/// Properties: every byte handed out lies in a requested range and arrives once, a part's
/// bytes in order; a complete body delivered every requested byte.
enum MultipartTarget {
    static let requested: [Range<Int64>] = [0..<10, 20..<30, 100..<200]

    static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let first = bytes.first else { return }
        let body = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        if let boundary = MultipartByteRanges.boundary(fromContentType: String(decoding: body.prefix(200), as: UTF8.self)) {
            check((1...70).contains(boundary.utf8.count), "boundary of \(boundary.utf8.count) bytes")
        }
        let chunkSize = Int(first) + 1
        var parser = MultipartByteRanges(boundary: "B0UND", requested: requested, fileBytes: 1000)
        var received = Set<Int64>()
        var start = 0
        while start < body.count {
            let chunk = UnsafeRawBufferPointer(rebasing: body[start..<min(start + chunkSize, body.count)])
            start += chunkSize
            guard let pieces = try? parser.feed(chunk) else { return }
            for piece in pieces {
                check(piece.bytes.lowerBound >= 0 && piece.bytes.upperBound <= chunk.count, "piece \(piece.bytes) outside a \(chunk.count)-byte chunk")
                for offset in piece.offset..<(piece.offset + Int64(piece.bytes.count)) {
                    check(requested.contains { $0.contains(offset) }, "byte \(offset) was not requested")
                    check(received.insert(offset).inserted, "byte \(offset) arrived twice")
                }
            }
            if parser.isComplete { break }
        }
        if parser.isComplete {
            check(received.count == requested.reduce(0) { $0 + $1.count }, "complete after \(received.count) bytes")
        }
    }
}
