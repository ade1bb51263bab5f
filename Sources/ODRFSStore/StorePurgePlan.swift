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
        public let sha256: String
        public var bytes: Int64
        public var lastAccess: Date?
        /// A passthrough copy of a file (`files/`), not a pack: no bundle names it, so it is
        /// in class 1 (it is derived: the next open of its file copies it again).
        public var isFileCopy: Bool
        /// ``sha256`` hashed to a number once (``StorePurgePlan/key(of:)``): a decision looks
        /// 100,000 objects up by it (hashing a 64-character string for each costs milliseconds).
        let key: UInt64

        public init(sha256: String, bytes: Int64, lastAccess: Date?, isFileCopy: Bool = false) {
            self.sha256 = sha256
            self.bytes = bytes
            self.lastAccess = lastAccess
            self.isFileCopy = isFileCopy
            key = StorePurgePlan.key(of: sha256)
        }
    }

    /// A 64-bit FNV-1a hash of `hash`'s bytes: cheap to compare and to hash, and spread
    /// however the hashes look (synthetic ones share long prefixes). A lookup by key is
    /// always confirmed by the whole string.
    static func key(of hash: String) -> UInt64 {
        var key: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in hash.utf8 { key = (key ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return key
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
        public var isFileCopy = false
        /// The bundle whose queue gave it (nil for class 1).
        public var bundle: String?
        /// Its preservation priority in that bundle (nil for class 1).
        public var priority: Double?
        public var lastAccess: Date?

        /// The rule of the order that chose it, for logs and events (formatted on demand:
        /// a plan may hold tens of thousands of victims).
        public var rule: String {
            guard let bundle else { return "not named by any mounted revision, least recently used first" }
            let used = lastAccess.map { $0.formatted(.iso8601) } ?? "never"
            return (purgeClass == .idleBundle ? "bundle \(bundle) not running" : "bundle \(bundle) running")
                + ": its lowest preservation priority first (\(priority ?? 0)), then least recently used (last access \(used)); bundles merged by last use"
        }
    }

    /// The victims of one decision, in order: positions in the decision's objects, made
    /// into ``Victim``s only when read, so that choosing 80,000 of them copies no string.
    public struct Victims: RandomAccessCollection, Sendable {
        struct Choice: Sendable {
            var position: Int
            var purgeClass: Class
            /// Position in the decision's bundles; -1 for class 1.
            var bundle: Int32
            var priority: Double
        }

        let objects: [Object]
        let bundles: [MountedBundle]
        var choices: [Choice] = []

        public var startIndex: Int { 0 }
        public var endIndex: Int { choices.count }

        public subscript(position: Int) -> Victim {
            let choice = choices[position]
            let object = objects[choice.position]
            let chosenBy = choice.bundle >= 0 ? Int(choice.bundle) : nil
            return Victim(sha256: object.sha256, bytes: object.bytes, purgeClass: choice.purgeClass, isFileCopy: object.isFileCopy,
                          bundle: chosenBy.map { bundles[$0].key }, priority: chosenBy.map { _ in choice.priority }, lastAccess: object.lastAccess)
        }
    }

    /// Victims, in order, until they add up to `needed` bytes (all candidates if they hold less).
    /// O(n log n + v · b) in the packs n, the victims v and the mounted bundles b.
    public static func victims(freeing needed: Int64, objects: [Object], bundles: [MountedBundle]) -> Victims {
        var victims = Victims(objects: objects, bundles: bundles)
        guard needed > 0 else { return victims }
        // Positions instead of strings and dates from here on: 100,000 objects in milliseconds.
        let used = objects.map { $0.lastAccess?.timeIntervalSince1970 ?? -.infinity }
        // One lookup per object, by number, in a table of what the bundles name (usually
        // far fewer entries than objects), not a table of every object.
        var named: [UInt64: [(hash: String, bundle: Int32, priority: Double, isBase: Bool)]] = [:]
        for (bundle, mounted) in bundles.enumerated() {
            for (hash, entry) in mounted.packs { named[key(of: hash), default: []].append((hash, Int32(bundle), entry.priority, entry.isBase)) }
        }
        var referencedBy: [[(bundle: Int32, priority: Double)]] = Array(repeating: [], count: objects.count)
        var protected = [Bool](repeating: false, count: objects.count)
        if !named.isEmpty {
            for (index, object) in objects.enumerated() {
                guard !object.isFileCopy, let candidates = named[object.key] else { continue }
                let entries = candidates.filter { $0.hash == object.sha256 }
                referencedBy[index] = entries.map { ($0.bundle, $0.priority) }
                protected[index] = entries.contains { $0.isBase }
            }
        }
        // Ties (equal last use) in the index's order: no string comparisons in the sorts.
        let older = { (a: Int, b: Int) -> Bool in used[a] != used[b] ? used[a] < used[b] : a < b }
        var freed: Int64 = 0
        var taken = [Bool](repeating: false, count: objects.count)
        func take(_ index: Int, _ purgeClass: Class, bundle: Int?) -> Bool {
            taken[index] = true
            let priority = bundle.flatMap { chosen in referencedBy[index].first { Int($0.bundle) == chosen }?.priority } ?? 0
            victims.choices.append(Victims.Choice(position: index, purgeClass: purgeClass, bundle: bundle.map(Int32.init) ?? -1, priority: priority))
            let (sum, overflow) = freed.addingReportingOverflow(objects[index].bytes)
            freed = overflow ? .max : sum
            return freed >= needed
        }
        // Class 1 by a heap of (last use, position): what is needed is usually a few of
        // many, so no full sort, and the comparisons are of numbers in place.
        var unreferenced: [LeastRecentlyUsed.Entry] = []
        unreferenced.reserveCapacity(objects.count)
        for index in objects.indices where referencedBy[index].isEmpty { unreferenced.append(.init(used: used[index], position: index)) }
        // When the need is a large share of them (judged by their mean size), one sort
        // costs less than popping most of a heap.
        var unreferencedBytes: Int64 = 0
        for entry in unreferenced { unreferencedBytes = unreferencedBytes.addingReportingOverflow(objects[entry.position].bytes).partialValue }
        let expected = unreferenced.isEmpty || unreferencedBytes <= 0 ? 0 : Double(needed) / (Double(unreferencedBytes) / Double(unreferenced.count))
        if expected > Double(unreferenced.count) / 16 {
            unreferenced.sort { $0.isBefore($1) }
            for entry in unreferenced {
                if take(entry.position, .unreferenced, bundle: nil) { return victims }
            }
        } else {
            var heap = LeastRecentlyUsed(unreferenced)
            while let index = heap.pop() {
                if take(index, .unreferenced, bundle: nil) { return victims }
            }
        }
        for purgeClass in [Class.idleBundle, .runningBundle] {
            // Each bundle's queue: its packs of this class, its lowest priority first, then LRU.
            var queues: [[(index: Int, priority: Double)]] = Array(repeating: [], count: bundles.count)
            for index in objects.indices where !protected[index] && !referencedBy[index].isEmpty && !taken[index] {
                let running = referencedBy[index].contains { bundles[Int($0.bundle)].running }
                guard (running ? Class.runningBundle : .idleBundle) == purgeClass else { continue }
                for entry in referencedBy[index] { queues[Int(entry.bundle)].append((index, entry.priority)) }
            }
            for bundle in queues.indices {
                queues[bundle].sort { a, b in a.priority != b.priority ? a.priority < b.priority : older(a.index, b.index) }
            }
            var heads = Array(repeating: 0, count: queues.count)
            while true {
                // The queue whose head was used longest ago goes next.
                var best: Int?
                for queue in queues.indices {
                    while heads[queue] < queues[queue].count, taken[queues[queue][heads[queue]].index] { heads[queue] += 1 }
                    guard heads[queue] < queues[queue].count else { continue }
                    if let current = best {
                        if older(queues[queue][heads[queue]].index, queues[current][heads[current]].index) { best = queue }
                    } else {
                        best = queue
                    }
                }
                guard let chosen = best else { break }
                let item = queues[chosen][heads[chosen]]
                heads[chosen] += 1
                if take(item.index, purgeClass, bundle: chosen) { return victims }
            }
        }
        return victims
    }
}

/// A binary min-heap of positions by last use (ties by position): built in O(n), popped
/// in O(log n), with the keys beside the positions so that no comparison calls a closure.
struct LeastRecentlyUsed {
    struct Entry {
        var used: Double
        var position: Int

        @inline(__always) func isBefore(_ other: Entry) -> Bool {
            used != other.used ? used < other.used : position < other.position
        }
    }

    private var items: [Entry]

    init(_ items: [Entry]) {
        self.items = items
        var index = items.count / 2
        while index > 0 {
            index -= 1
            siftDown(index)
        }
    }

    mutating func pop() -> Int? {
        guard let first = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            siftDown(0)
        }
        return first.position
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        let count = items.count
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < count, items[left].isBefore(items[smallest]) { smallest = left }
            if right < count, items[right].isBefore(items[smallest]) { smallest = right }
            if smallest == parent { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
