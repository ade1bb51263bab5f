import Foundation
import ODRFSCore

/// The `Retry-After` header of a 429 or 503 (RFC 9110 §10.2.3): delay-seconds or an
/// HTTP-date. A CDN or origin that says how long it is busy is waited for instead of
/// hammered by the exponential backoff's next, shorter attempt.
enum RetryAfter {
    /// The longest wait a header can ask for; longer requests (a date in year 9999, a clock
    /// far in the past) are clamped here. The fetch's deadline still bounds the real wait.
    static let maximumSeconds: Int64 = 86_400

    /// The delay the header asks for, or nil if it is neither form; a date in the past is 0,
    /// anything beyond ``maximumSeconds`` is that.
    static func delay(from value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // Nine digits always fit; longer texts are over the maximum anyway.
            let seconds = text.count > 9 ? Int64.max : Int64(text) ?? 0
            return .seconds(min(seconds, maximumSeconds))
        }
        guard let seconds = HTTPDate.parse(text) else { return nil }
        // Clamp in floating point before converting: `now` is any Date and the difference
        // may not fit in an Int64 of milliseconds.
        let wait = min(max(0, Double(seconds) - now.timeIntervalSince1970), Double(maximumSeconds))
        return .milliseconds(Int64(wait.isNaN ? 0 : wait * 1000))
    }
}
