import Foundation

/// Range, single or multiple (what `odrfs serve` reads from a client), Content-Range and Retry-After (what a mount
/// reads from an origin). The first eight bytes, when there are that many, are the file size
/// the Range header is resolved against; the rest is the header value for all three parsers.
enum HeadersTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        var fileSize: Int64 = 1000
        var value = bytes[...]
        if bytes.count >= 8 {
            fileSize = Int64(bitPattern: bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) & Int64.max
            value = bytes.dropFirst(8)
        }
        let header = String(decoding: value, as: UTF8.self)

        if case .partial(let range) = ByteRangeRequest(header: header, fileSize: fileSize) {
            check(range.lowerBound >= 0 && range.upperBound < fileSize,
                  "Range \(header) on a \(fileSize)-byte file gave \(range)")
        }
        if case .multipart(let ranges) = ByteRangeRequest(header: header, fileSize: fileSize) {
            check((2...ByteRangeRequest.maximumParts).contains(ranges.count), "Range \(header) gave \(ranges.count) parts")
            for (index, range) in ranges.enumerated() {
                check(range.lowerBound >= 0 && range.upperBound < fileSize, "Range \(header) on a \(fileSize)-byte file gave \(range)")
                if index > 0 {
                    check(ranges[index - 1].upperBound + 1 < range.lowerBound, "Range \(header) gave unsorted, overlapping or adjacent parts")
                }
            }
        }
        if let range = ContentRange(header: header) {
            check(range.first >= 0 && range.first <= range.last, "Content-Range \(header) gave \(range)")
            if let total = range.total { check(range.last < total, "Content-Range \(header) ends past its total") }
        }
        _ = ContentRange.unsatisfiedTotal(header)
        if let delay = RetryAfter.delay(from: header, now: Date(timeIntervalSince1970: 1_700_000_000)) {
            check(delay >= .zero, "Retry-After \(header) gave a negative delay \(delay)")
        }
    }
}
