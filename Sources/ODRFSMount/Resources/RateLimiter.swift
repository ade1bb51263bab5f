import Synchronization

/// A token bucket shared by every prefetch and background download: `--max-background-rate`.
/// Each download asks for its bytes before writing them and sleeps until they are allowed,
/// so together they stay under the rate, whatever their number.
final class RateLimiter: Sendable {
    private struct State {
        /// May go negative: a debt that later callers wait out.
        var available: Double
        var refilled = ContinuousClock.now
    }

    /// Bytes per second.
    let rate: Double
    /// The most that may go at once after a quiet spell: a quarter of a second's worth.
    private let burst: Double
    private let state: Mutex<State>

    init(bytesPerSecond: Int64) {
        rate = Double(max(1, bytesPerSecond))
        burst = max(rate / 4, 16 * 1024)
        state = Mutex(State(available: max(rate / 4, 16 * 1024)))
    }

    /// Takes `bytes` from the bucket, sleeping as long as the rate requires. Throws
    /// `CancellationError` if the task is cancelled while it sleeps.
    func take(_ bytes: Int) async throws {
        let wait = state.withLock { state -> Double in
            let now = ContinuousClock.now
            let elapsed = now - state.refilled
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            state.available = min(burst, state.available + seconds * rate)
            state.refilled = now
            state.available -= Double(bytes)
            return state.available < 0 ? -state.available / rate : 0
        }
        if wait > 0 { try await Task.sleep(for: .milliseconds(Int64(wait * 1000))) }
    }
}
