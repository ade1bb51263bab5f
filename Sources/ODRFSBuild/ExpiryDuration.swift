import Foundation
import ODRFSCore

/// `odrfs build --expires DURATION`: a whole number followed by `s`, `m`, `h` or `d`
/// (seconds, minutes, hours, days), e.g. `30d`. The manifest stores the absolute time
/// (build time + duration, Unix seconds), so the same input built at another time differs
/// in that one field.
public struct ExpiryDuration: Sendable, Equatable, CustomStringConvertible {
    public let seconds: Int64
    public let text: String

    /// Nil unless `text` is 1 to 12 digits and a unit, and the duration is positive.
    public init?(parsing text: String) {
        guard let unit = text.last, let factor = Self.factors[unit] else { return nil }
        let digits = text.dropLast()
        guard (1...12).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let count = Int64(digits), count > 0 else { return nil }
        // 12 digits × 86,400 fits in Int64, but check anyway: this is user input.
        let (seconds, overflow) = count.multipliedReportingOverflow(by: factor)
        guard !overflow else { return nil }
        self.seconds = seconds
        self.text = text
    }

    private static let factors: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]

    /// The expiry time for a build at `now`, in Unix seconds (rounded down to the second),
    /// or nil when it falls outside ``BundleLimits/expiryRange``.
    public func expiry(after now: Date) -> Int64? {
        let start = now.timeIntervalSince1970.rounded(.down)
        guard start >= 0, start <= Double(BundleLimits.expiryRange.upperBound) else { return nil }
        let (sum, overflow) = Int64(start).addingReportingOverflow(seconds)
        guard !overflow, BundleLimits.expiryRange.contains(sum) else { return nil }
        return sum
    }

    public var description: String { text }
}
