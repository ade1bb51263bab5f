import Foundation

/// What a `Range` header asks of a file of a known size (RFC 9110 §14.1.2).
///
/// Only single byte ranges are honoured: that is all a resuming fetcher needs, and a
/// server may always answer a range request with the whole file. So a malformed header,
/// another unit or a multi-range request means "send everything" rather than an error.
enum ByteRangeRequest: Equatable {
    /// No usable Range header: answer 200 with the whole file.
    case whole
    /// Answer 206 with these bytes (offsets within the file, both ends inclusive).
    case partial(ClosedRange<Int64>)
    /// A well-formed range that lies outside the file: answer 416.
    case unsatisfiable

    init(header: String?, fileSize: Int64) {
        guard let header else {
            self = .whole
            return
        }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes="), !trimmed.contains(",") else {
            self = .whole
            return
        }
        let spec = trimmed.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard let dash = spec.firstIndex(of: "-") else {
            self = .whole
            return
        }
        let first = String(spec[..<dash]).trimmingCharacters(in: .whitespaces)
        let last = String(spec[spec.index(after: dash)...]).trimmingCharacters(in: .whitespaces)
        guard first.allSatisfy(\.isASCIIDigit), last.allSatisfy(\.isASCIIDigit) else {
            self = .whole
            return
        }
        switch (Int64(first), Int64(last)) {
        case let (start?, end?):
            guard start <= end else {
                self = .whole
                return
            }
            self = start < fileSize ? .partial(start...min(end, fileSize - 1)) : .unsatisfiable
        case let (start?, nil) where last.isEmpty:
            self = start < fileSize ? .partial(start...(fileSize - 1)) : .unsatisfiable
        case let (nil, suffix?) where first.isEmpty:
            // "bytes=-N": the last N bytes; a zero-length suffix cannot be satisfied.
            guard suffix > 0, fileSize > 0 else {
                self = .unsatisfiable
                return
            }
            self = .partial(max(0, fileSize - suffix)...(fileSize - 1))
        default:
            // Empty on both sides, or digits too long for 63 bits.
            self = .whole
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
