import Foundation

/// The machine-wide store's purge order, as iOS purges On-Demand Resources across apps: a
/// pure decision over the store's objects and what its live mounts published (each bundle's
/// packs with their preservation priorities, whether it is running). Never a base pack of a
/// mounted bundle; a pack any mount retains is skipped when it is carried out (its file is
/// locked). Then, in this order:
/// 1. packs no mounted revision names (unmounted bundles, replaced revisions), least
///    recently used first;
/// 2. packs of bundles that are mounted but not running (nothing open, nothing held);
/// 3. packs of running bundles.
/// Within 2 and 3 each bundle orders its own packs by its preservation priority (compared
/// only within that bundle), then by last use; the bundles' queues are merged by the last
/// use of each queue's head, oldest first, so one bundle's priorities never outrank
/// another's. A pack two bundles name is in class 3 if either runs, and its last use is the
/// later of theirs (the store keeps one per pack).
public enum StorePurgePlan {
    /// One stored pack.
    public struct Object: Sendable {
        public var sha256: String
        public var bytes: Int64
        public var lastAccess: Date?

        public init(sha256: String, bytes: Int64, lastAccess: Date?) {
            self.sha256 = sha256
            self.bytes = bytes
            self.lastAccess = lastAccess
        }
    }

    /// What one live mount published: its bundle, whether it runs, and per pack its
    /// preservation priority and whether it is a base pack.
    public struct MountedBundle: Sendable {
        public var key: String
        public var running: Bool
        public var packs: [String: (priority: Double, isBase: Bool)]

        public init(key: String, running: Bool, packs: [String: (priority: Double, isBase: Bool)]) {
            self.key = key
            self.running = running
            self.packs = packs
        }
    }

    /// The three classes, in purge order.
    public enum Class: Int, Sendable, Comparable {
        case unreferenced = 1, idleBundle, runningBundle

        public static func < (lhs: Class, rhs: Class) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// One pack to remove, why, and by which rule.
    public struct Victim: Sendable, Equatable {
        public var sha256: String
        public var bytes: Int64
        public var purgeClass: Class
        /// The bundle whose queue gave it (nil for class 1).
        public var bundle: String?
        public var rule: String
    }

    /// Victims, in order, until they add up to `needed` bytes (all candidates if they hold less).
    /// O(n log n + n · b) in the packs n and the mounted bundles b.
    public static func victims(freeing needed: Int64, objects: [Object], bundles: [MountedBundle]) -> [Victim] {
        guard needed > 0 else { return [] }
        var referencedBy: [String: [Int]] = [:]
        var protected: Set<String> = []
        for (position, bundle) in bundles.enumerated() {
            for (hash, entry) in bundle.packs {
                referencedBy[hash, default: []].append(position)
                if entry.isBase { protected.insert(hash) }
            }
        }
        var victims: [Victim] = []
        var freed: Int64 = 0
        func take(_ object: Object, _ purgeClass: Class, bundle: String?, rule: String) -> Bool {
            victims.append(Victim(sha256: object.sha256, bytes: object.bytes, purgeClass: purgeClass, bundle: bundle, rule: rule))
            let (sum, overflow) = freed.addingReportingOverflow(object.bytes)
            freed = overflow ? .max : sum
            return freed >= needed
        }
        let unreferenced = objects.filter { referencedBy[$0.sha256] == nil }.sorted(by: olderFirst)
        for object in unreferenced {
            if take(object, .unreferenced, bundle: nil, rule: "not named by any mounted revision, least recently used first") { return victims }
        }
        for purgeClass in [Class.idleBundle, .runningBundle] {
            // Each bundle's queue: its packs of this class, its lowest priority first, then LRU.
            var queues: [(bundle: Int, items: [(object: Object, priority: Double)])] = []
            var members: [Int: [(object: Object, priority: Double)]] = [:]
            for object in objects where !protected.contains(object.sha256) {
                guard let positions = referencedBy[object.sha256] else { continue }
                let running = positions.contains { bundles[$0].running }
                guard (running ? Class.runningBundle : .idleBundle) == purgeClass else { continue }
                for position in positions {
                    members[position, default: []].append((object, bundles[position].packs[object.sha256]?.priority ?? 0))
                }
            }
            for (position, items) in members.sorted(by: { $0.key < $1.key }) {
                queues.append((position, items.sorted { a, b in
                    a.priority != b.priority ? a.priority < b.priority : olderFirst(a.object, b.object)
                }))
            }
            var heads = Array(repeating: 0, count: queues.count)
            var taken = Set(victims.map(\.sha256))
            while true {
                // The queue whose head was used longest ago goes next.
                var best: Int?
                for queue in queues.indices {
                    while heads[queue] < queues[queue].items.count, taken.contains(queues[queue].items[heads[queue]].object.sha256) { heads[queue] += 1 }
                    guard heads[queue] < queues[queue].items.count else { continue }
                    if let current = best {
                        if olderFirst(queues[queue].items[heads[queue]].object, queues[current].items[heads[current]].object) { best = queue }
                    } else {
                        best = queue
                    }
                }
                guard let chosen = best else { break }
                let item = queues[chosen].items[heads[chosen]]
                heads[chosen] += 1
                taken.insert(item.object.sha256)
                let bundle = bundles[queues[chosen].bundle].key
                let used = item.object.lastAccess.map { $0.formatted(.iso8601) } ?? "never"
                let rule = (purgeClass == .idleBundle ? "bundle \(bundle) not running" : "bundle \(bundle) running")
                    + ": its lowest preservation priority first (\(item.priority)), then least recently used (last access \(used)); bundles merged by last use"
                if take(item.object, purgeClass, bundle: bundle, rule: rule) { return victims }
            }
        }
        return victims
    }

    /// Never used first, then the oldest use, then by hash (a stable order).
    static func olderFirst(_ a: Object, _ b: Object) -> Bool {
        switch (a.lastAccess, b.lastAccess) {
        case (nil, nil): return a.sha256 < b.sha256
        case (nil, _): return true
        case (_, nil): return false
        case (let x?, let y?): return x != y ? x < y : a.sha256 < b.sha256
        }
    }
}
