import Foundation

/// A `Content-Range: bytes first-last/total` response header (RFC 9110 §14.4), as a
/// resuming download must check it: a server that answers with other bytes than asked
/// for must not have them appended.
struct ContentRange: Equatable {
    var first: Int64
    var last: Int64
    /// nil for `*` (length unknown).
    var total: Int64?

    /// Parses "bytes 10-99/100" or "bytes 10-99/*"; nil for anything else, including the
    /// unsatisfied form "bytes */100".
    init?(header: String) {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = text.dropFirst("bytes ".count)
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]),
              first >= 0, first <= last else { return nil }
        if halves[1] == "*" {
            total = nil
        } else {
            guard let total = Int64(halves[1]), total > last else { return nil }
            self.total = total
        }
        self.first = first
        self.last = last
    }

    /// The total of an unsatisfied-range header, "bytes */100".
    static func unsatisfiedTotal(_ header: String) -> Int64? {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes */") else { return nil }
        return Int64(text.dropFirst("bytes */".count))
    }
}
