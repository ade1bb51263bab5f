import Foundation

/// What a `Range` header asks of a file of a known size (RFC 9110 §14.1.2).
///
/// Single ranges answer 206 with the bytes; several ranges answer one 206
/// `multipart/byteranges` (see `ServedFile+Multipart.swift`). The header is hostile input,
/// and a server may always answer a range request with the whole file, so:
/// - a malformed header, another unit, or more than ``maximumSpecs`` specs means "send
///   everything" (200) rather than an error;
/// - a well-formed header none of whose ranges lies inside the file is 416;
/// - satisfiable ranges are clamped to the file, sorted, and overlapping or adjacent ones
///   merged (RFC 9110 §14.2 allows it), so a response never repeats a byte and is never
///   larger than the file plus the part headers, whatever the client asked;
/// - one range left after merging is an ordinary single-range 206; more than
///   ``maximumParts`` left answer 200 with the whole file (cheaper for both sides than
///   that many parts, and it bounds the multipart framing a request can cost).
enum ByteRangeRequest: Equatable {
    /// No usable Range header: answer 200 with the whole file.
    case whole
    /// Answer 206 with these bytes (offsets within the file, both ends inclusive).
    case partial(ClosedRange<Int64>)
    /// Answer 206 `multipart/byteranges` with these parts: 2…``maximumParts`` ranges,
    /// sorted, inside the file, neither overlapping nor adjacent.
    case multipart([ClosedRange<Int64>])
    /// A well-formed range set none of which lies inside the file: answer 416.
    case unsatisfiable

    /// The most parts a multipart answer has; a request that still has more after merging gets the whole file.
    static let maximumParts = 64
    /// The most comma-separated specs read at all: a longer header is not parsed further.
    static let maximumSpecs = 256

    /// One spec of the header, resolved against the file.
    private enum Spec {
        case malformed
        case outside
        case inside(ClosedRange<Int64>)
    }

    init(header: String?, fileSize: Int64) {
        guard let header, fileSize >= 0 else {
            self = .whole
            return
        }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else {
            self = .whole
            return
        }
        let specs = trimmed.dropFirst("bytes=".count).split(separator: ",", omittingEmptySubsequences: false)
        guard specs.count <= Self.maximumSpecs else {
            self = .whole
            return
        }
        var ranges: [ClosedRange<Int64>] = []
        for text in specs {
            switch Self.spec(text, fileSize: fileSize) {
            case .malformed:
                self = .whole
                return
            case .outside: continue
            case .inside(let range): ranges.append(range)
            }
        }
        let merged = Self.merge(ranges)
        switch merged.count {
        case 0: self = .unsatisfiable
        case 1: self = .partial(merged[0])
        case ...Self.maximumParts: self = .multipart(merged)
        default: self = .whole
        }
    }

    /// Sorted, with overlapping and adjacent ranges joined. Ranges lie inside the file, so
    /// `upperBound + 1` cannot overflow.
    static func merge(_ ranges: [ClosedRange<Int64>]) -> [ClosedRange<Int64>] {
        var merged: [ClosedRange<Int64>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound + 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }

    /// "a-b", "a-" or "-n", spaces around allowed; numbers of at most 19 digits (one that
    /// does not fit 63 bits makes the spec malformed), so a long header costs little.
    private static func spec(_ text: Substring, fileSize: Int64) -> Spec {
        let spec = text.trimmingCharacters(in: .whitespaces)
        guard let dash = spec.firstIndex(of: "-") else { return .malformed }
        let first = String(spec[..<dash]).trimmingCharacters(in: .whitespaces)
        let last = String(spec[spec.index(after: dash)...]).trimmingCharacters(in: .whitespaces)
        guard first.count <= 19, last.count <= 19,
              first.allSatisfy(\.isASCIIDigit), last.allSatisfy(\.isASCIIDigit) else { return .malformed }
        switch (Int64(first), Int64(last)) {
        case let (start?, end?):
            guard start <= end else { return .malformed }
            return start < fileSize ? .inside(start...min(end, fileSize - 1)) : .outside
        case let (start?, nil) where last.isEmpty:
            return start < fileSize ? .inside(start...(fileSize - 1)) : .outside
        case let (nil, suffix?) where first.isEmpty:
            // "bytes=-N": the last N bytes; a zero-length suffix cannot be satisfied.
            guard suffix > 0, fileSize > 0 else { return .outside }
            return .inside(max(0, fileSize - suffix)...(fileSize - 1))
        default:
            // Empty on both sides.
            return .malformed
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
