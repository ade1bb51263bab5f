import Foundation
import ODRFSCore

/// Delays between attempts of one fetch: exponential, capped, with jitter so that many
/// mounts whose origin comes back at the same moment do not all return in lock step.
struct RetryBackoff: Sendable {
    var initial: Duration = .milliseconds(200)
    var maximum: Duration = .seconds(5)

    /// The delay after the `failures`-th consecutive failure (1-based): `initial · 2^(n-1)`,
    /// capped at `maximum`, then scaled by a random factor in [0.5, 1].
    func delay(afterFailure failures: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let exponent = min(max(failures - 1, 0), 20)
        let uncapped = initial * (1 << exponent)
        let capped = min(uncapped, maximum)
        return capped * Double.random(in: 0.5...1.0, using: &generator)
    }
}

/// The `Retry-After` header of a 429 or 503 (RFC 9110 §10.2.3): delay-seconds or an
/// HTTP-date. A CDN or origin that says how long it is busy is waited for instead of
/// hammered by the exponential backoff's next, shorter attempt.
enum RetryAfter {
    /// The delay the header asks for, or nil if it is neither form; a date in the past is 0.
    static func delay(from value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            // Absurdly long waits are still bounded by the fetch's deadline; avoid overflow.
            return .seconds(Int64(text.prefix(9)) ?? 0)
        }
        guard let seconds = HTTPDate.parse(text) else { return nil }
        return .milliseconds(Int64(max(0, Double(seconds) - now.timeIntervalSince1970) * 1000))
    }
}
