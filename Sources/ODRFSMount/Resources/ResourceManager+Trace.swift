import Foundation
import ODRFSCore
import ODRFSStore

extension ResourceManager {
    /// Notes that `cause` needs `pack` (the trace keeps each pack's first need);
    /// `file` is evaluated only when this is the first.
    public func noteAccess(_ pack: PackNumber, cause: TraceEntry.Cause, file: @autoclosure () -> String? = nil) {
        recorder.note(pack, cause: cause, file: file())
    }

    /// Starts this manager's trace session if it was made without one (`beginningTrace:
    /// false`, a mount's first manager built before its index arrived); otherwise nothing.
    /// Blocking (SQLite): on the I/O executor.
    func beginTraceSession(now: Date) {
        recorder.begin(now: now)
    }

    /// The traces of the newest `sessions` mount sessions up to this one, oldest first.
    public func traces(sessions: Int) async throws(StoreError) -> [[TraceEntry]] {
        let through = recorder.session
        return try await io.run { () throws(StoreError) in
            try self.store.bundleIndex.traces(last: sessions, through: through)
        }
    }

    /// Packs in the order this machine's earlier sessions first needed them (merged by
    /// first-need rank over the last ``learningSessions``; prefetch-only packs ignored),
    /// for `--learn-prefetch`. Empty when there is no history.
    public func learnedPrefetchOrder() async -> [PackNumber] {
        let before = recorder.session.map { $0 - 1 }
        guard let before, before > 0 else { return [] }
        let history: [[TraceEntry]]
        do {
            history = try await io.run { () throws(StoreError) in
                try self.store.bundleIndex.traces(last: Self.learningSessions, through: before)
            }
        } catch {
            logger.warning("cannot read the access history; prefetch follows the manifest only", metadata: ["error": "\(error)"])
            return []
        }
        var numbers: [String: PackNumber] = [:]
        for (offset, pack) in manifest.packs.enumerated() { numbers[pack.id.rawValue] = PackNumber(UInt32(offset)) }
        return AccessTrace.packOrder(history).compactMap { numbers[$0] }
    }

    /// How many past sessions `--learn-prefetch` merges.
    public static let learningSessions = 10
}
