import Foundation
import ODRFSControl
import Synchronization

/// A ``ControlService`` without a mount: tags map to packs, "downloads" are timed
/// steps that honour cancellation, and every retain and release is recorded so tests
/// can assert they balance.
public final class FakeControlService: ControlService {
    public struct Pack: Sendable {
        public var id: String
        public var tags: [String]
        public var bytes: Int64
        public var isLocal: Bool
    }

    struct State {
        var packs: [Pack]
        var retains: [Int] = []
        var priorities: [String: Double] = [:]
        var begins = 0
        var ends = 0
        var cancelledWaits = 0
        var watchers: [UUID: AsyncStream<LowDiskSpaceEvent>.Continuation] = [:]
        var threadNames: [String] = []
    }

    /// Time per download step (10 steps per pack).
    public let stepDelay: Duration
    public let maximumInUse: Int64
    public let failure: Mutex<ControlError?> = Mutex(nil)
    /// While true, a download that has reached half of its first pack waits there, so a
    /// test can see an intermediate fraction however slowly it is scheduled.
    public let holdHalfway: Mutex<Bool> = Mutex(false)
    /// Events published here go to `watch-events` clients.
    public let events = MountEvents()
    private let state: Mutex<State>

    /// Packs: `base` (local), `Iceland` (local), `Italy`, `Italy+Rome` (shared), `Rome`,
    /// `Huge`, then `extraPacks` more (`T00000`, …, one tag each), for large replies.
    public init(stepDelay: Duration = .milliseconds(20), maximumInUse: Int64 = 1_000_000, extraPacks: Int = 0) {
        self.stepDelay = stepDelay
        self.maximumInUse = maximumInUse
        state = Mutex(State(packs: [
            Pack(id: "base", tags: [], bytes: 100, isLocal: true),
            Pack(id: "Iceland", tags: ["Iceland"], bytes: 1_000, isLocal: true),
            Pack(id: "Italy", tags: ["Italy"], bytes: 2_000, isLocal: false),
            Pack(id: "Italy+Rome", tags: ["Italy", "Rome"], bytes: 500, isLocal: false),
            Pack(id: "Rome", tags: ["Rome"], bytes: 300, isLocal: false),
            Pack(id: "Huge", tags: ["Huge"], bytes: 5_000_000, isLocal: false),
        ] + (0..<extraPacks).map { n in
            let name = "T" + String(repeating: "0", count: max(0, 5 - String(n).count)) + String(n)
            return Pack(id: name, tags: [name], bytes: 1_000, isLocal: false)
        }))
        state.withLock { $0.retains = Array(repeating: 0, count: $0.packs.count) }
    }

    public var totalRetains: Int { state.withLock { $0.retains.reduce(0, +) } }
    public var beginCount: Int { state.withLock { $0.begins } }
    public var endCount: Int { state.withLock { $0.ends } }
    public var cancelledWaits: Int { state.withLock { $0.cancelledWaits } }
    public func isLocal(_ id: String) -> Bool { state.withLock { s in s.packs.first { $0.id == id }!.isLocal } }
    public func retains(_ id: String) -> Int { state.withLock { s in s.retains[s.packs.firstIndex { $0.id == id }!] } }
    public var watcherCount: Int { state.withLock { $0.watchers.count } }
    /// The names of the threads `status` and `setPreservationPriority` ran on.
    public var threadNames: [String] { state.withLock { $0.threadNames } }

    private func recordThread() {
        // The thread's name (pthread_getname_np is hidden behind _GNU_SOURCE).
        let text = ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        state.withLock { $0.threadNames.append(text) }
    }

    /// Sends `event` to every low-disk-space watcher.
    public func emitLowDiskSpace(_ event: LowDiskSpaceEvent) {
        state.withLock { $0.watchers.values.forEach { $0.yield(event) } }
    }

    private func packs(for tags: [String], in state: State) throws(ControlError) -> [Int] {
        var result: [Int] = []
        for tag in tags {
            let members = state.packs.indices.filter { state.packs[$0].tags.contains(tag) }
            guard !members.isEmpty else { throw ControlError(.invalidTag, "unknown tag '\(tag)': the bundle's manifest has no such tag") }
            result += members.filter { !result.contains($0) }
        }
        return result
    }

    public func status() async -> StatusSnapshot {
        recordThread()
        return state.withLock { state in
            let packs = state.packs.enumerated().map { index, pack in
                StatusSnapshot.PackEntry(
                    id: pack.id, tags: pack.tags, bytes: pack.bytes,
                    state: !pack.isLocal ? .notDownloaded : state.retains[index] > 0 ? .inUse : .downloaded,
                    retainCount: state.retains[index], lastAccess: Date(timeIntervalSince1970: 1_700_000_000),
                    preservationPriority: pack.tags.map { state.priorities[$0] ?? 0 }.max() ?? 0, fetchCount: 0)
            }
            let tags = ["Iceland", "Italy", "Rome", "Huge"].map { ($0, state.priorities[$0] ?? 0) }
            let inUse = zip(state.packs, state.retains).filter { $1 > 0 }.reduce(Int64(0)) { $0 + $1.0.bytes }
            return StatusSnapshot(packs: packs, tagPriorities: tags, cache: .init(
                cachedBytes: state.packs.filter(\.isLocal).reduce(0) { $0 + $1.bytes }, inUseBytes: inUse, maximumInUse: maximumInUse))
        }
    }

    /// Pushes progress at every step (10 per pack), as a download would.
    public func beginAccessing(tags: [String], loadingPriority: LoadingPriority,
                               progress: ProgressSink) async throws(ControlError) -> RetainToken {
        if let failure = failure.withLock({ $0 }) { throw failure }
        let (members, missing, total) = try state.withLock { state throws(ControlError) in
            let members = try packs(for: tags, in: state)
            let newBytes = members.filter { state.retains[$0] == 0 }.reduce(Int64(0)) { $0 + state.packs[$1].bytes }
            let inUse = zip(state.packs, state.retains).filter { $1 > 0 }.reduce(Int64(0)) { $0 + $1.0.bytes }
            guard inUse + newBytes <= maximumInUse else {
                throw ControlError(.exceededMaximumSize, "requesting \(newBytes) bytes more would exceed the in-use limit of \(maximumInUse)")
            }
            let missing = members.filter { !state.packs[$0].isLocal }
            return (members, missing, missing.reduce(Int64(0)) { $0 + state.packs[$1].bytes })
        }
        var done: Int64 = 0
        progress.report(completed: 0, total: total)
        for index in missing {
            let bytes = state.withLock { $0.packs[index].bytes }
            for step in 1...10 {
                do {
                    try await Task.sleep(for: stepDelay)
                } catch {
                    state.withLock { $0.cancelledWaits += 1 }
                    throw ControlError(.cancelled, "wait cancelled")
                }
                progress.report(completed: done + bytes * Int64(step) / 10, total: total)
                while step == 5, holdHalfway.withLock({ $0 }) {
                    do {
                        try await Task.sleep(for: .milliseconds(5))
                    } catch {
                        state.withLock { $0.cancelledWaits += 1 }
                        throw ControlError(.cancelled, "wait cancelled")
                    }
                }
            }
            done += bytes
            state.withLock { $0.packs[index].isLocal = true }
        }
        return state.withLock { state in
            members.forEach { state.retains[$0] += 1 }
            state.begins += 1
            return RetainToken(packs: members.map { UInt32($0) })
        }
    }

    public func beginAccessingIfLocal(tags: [String]) throws(ControlError) -> RetainToken? {
        try state.withLock { state throws(ControlError) -> RetainToken? in
            let members = try packs(for: tags, in: state)
            guard members.allSatisfy({ state.packs[$0].isLocal }) else { return nil }
            members.forEach { state.retains[$0] += 1 }
            state.begins += 1
            return RetainToken(packs: members.map { UInt32($0) })
        }
    }

    public func endAccessing(_ token: RetainToken) {
        state.withLock { state in
            token.packs.forEach { state.retains[Int($0)] -= 1 }
            state.ends += 1
        }
    }

    public func preservationPriorities(tags: [String]) throws(ControlError) -> [String: Double] {
        try state.withLock { state throws(ControlError) in
            _ = try packs(for: tags, in: state)
            return Dictionary(uniqueKeysWithValues: tags.map { ($0, state.priorities[$0] ?? 0) })
        }
    }

    public func setPreservationPriority(_ value: Double, tags: [String]) throws(ControlError) {
        recordThread()
        try state.withLock { state throws(ControlError) in
            _ = try packs(for: tags, in: state)
            tags.forEach { state.priorities[$0] = value }
        }
    }

    public func purge(tags: [String]?) async throws(ControlError) -> PurgeSummary {
        try state.withLock { state throws(ControlError) in
            let members = try tags.map { tags throws(ControlError) in try packs(for: tags, in: state) } ?? Array(state.packs.indices.dropFirst())
            var summary = PurgeSummary()
            for index in members where index > 0 && state.packs[index].isLocal {
                if state.retains[index] > 0 {
                    summary.kept.append(state.packs[index].id)
                } else {
                    state.packs[index].isLocal = false
                    summary.evicted.append(.init(id: state.packs[index].id, bytes: state.packs[index].bytes))
                }
            }
            return summary
        }
    }

    public func lowDiskSpaceEvents() -> AsyncStream<LowDiskSpaceEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: LowDiskSpaceEvent.self)
        let key = UUID()
        state.withLock { $0.watchers[key] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.watchers.removeValue(forKey: key) }
        }
        return stream
    }

    public func mountEvents() -> MountEventSubscription? {
        events.subscribe()
    }
}

