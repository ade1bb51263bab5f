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
