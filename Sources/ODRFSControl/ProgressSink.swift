/// Where a ``ControlService`` pushes the progress of one `request` while it waits.
///
/// Call ``report(completed:total:)`` whenever the numbers change (for example from a
/// download's progress callback), from any thread, as often as you like: it never
/// blocks and never waits for the client. The ``ControlServer`` keeps only the latest
/// value and sends it at most every 100 ms, plus the last value before the reply, so a
/// fast download cannot flood a client and a slow client cannot slow a download.
public final class ProgressSink: Sendable {
    private let deliver: @Sendable (_ completed: Int64, _ total: Int64) -> Void

    /// A sink that hands every report to `deliver` (which must not block).
    public init(_ deliver: @escaping @Sendable (_ completed: Int64, _ total: Int64) -> Void) {
        self.deliver = deliver
    }

    /// `completed` of `total` bytes are local.
    public func report(completed: Int64, total: Int64) {
        deliver(completed, total)
    }

    /// A sink that drops everything (callers that do not watch progress).
    public static let ignored = ProgressSink { _, _ in }
}
