import Foundation
import Synchronization

/// The outcome of the last update check, for `odrfs status` and `.odrfs/status`
/// (`available_revision`, `last_update_check`). A leaf lock: memory only.
final class UpdateCheckRecord: Sendable {
    struct Value: Sendable, Equatable {
        var availableRevision: Int64?
        var lastCheck: Date?
    }

    private let value = Mutex(Value())

    var current: Value { value.withLock { $0 } }

    func record(availableRevision: Int64, at date: Date) {
        value.withLock { $0 = Value(availableRevision: availableRevision, lastCheck: date) }
    }

    /// A check that found the manifest unchanged (HTTP 304).
    func touch(at date: Date) {
        value.withLock { $0.lastCheck = date }
    }
}
