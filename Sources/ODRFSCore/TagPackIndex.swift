/// A manifest's tag → packs and pack id → number relations, built once in two passes over
/// the packs' tag sets.
///
/// ``Manifest/packs(for:)`` and ``Manifest/packNumber(of:)`` scan every pack, which is
/// fine once but not per tag: a bundle with a tag per level has thousands of tags and as
/// many packs, and the mount asks for every prefetch tag, every initial-install tag and
/// every requested tag (10,000 tags × 10,000 packs = 10^8 comparisons at mount). Built from
/// a validated manifest, which it does not change.
public struct TagPackIndex: Sendable {
    /// Each tag's place: tags the manifest declares first, in its order, then any that only
    /// a pack names (a validated manifest has none).
    private let positions: [Tag: Int]
    private let declaredCount: Int
    /// The packs of the tag at place `t` are `members[starts[t]..<starts[t + 1]]`, in pack
    /// order: one flat array instead of an array per tag (100,000 tags in a ten-million-file
    /// bundle, issue 28, where the arrays cost 100,000 allocations at every mount).
    private let starts: [Int]
    private let members: [PackNumber]
    private let numbersByID: [PackID: PackNumber]

    public init(_ manifest: Manifest) {
        var positions: [Tag: Int] = [:]
        positions.reserveCapacity(manifest.tags.count)
        for descriptor in manifest.tags where positions[descriptor.tag] == nil {
            positions[descriptor.tag] = positions.count
        }
        declaredCount = positions.count
        var numbersByID: [PackID: PackNumber] = [:]
        numbersByID.reserveCapacity(manifest.packs.count)
        // Pass 1: each membership's tag place, in pack order (a tag a pack names twice once).
        var placesInPackOrder: [Int] = []
        placesInPackOrder.reserveCapacity(manifest.packs.count)
        var counts = [Int](repeating: 0, count: positions.count)
        // The last pack counted for each place: a tag a pack names twice counts once.
        var lastPack = [Int](repeating: -1, count: positions.count)
        var packOfMembership: [PackNumber] = []
        packOfMembership.reserveCapacity(manifest.packs.count)
        for (offset, pack) in manifest.packs.enumerated() {
            let number = PackNumber(UInt32(truncatingIfNeeded: offset))
            numbersByID[pack.id] = number
            for tag in pack.tags {
                let place: Int
                if let known = positions[tag] {
                    place = known
                } else {
                    place = positions.count
                    positions[tag] = place
                    counts.append(0)
                    lastPack.append(-1)
                }
                guard lastPack[place] != offset else { continue }
                lastPack[place] = offset
                placesInPackOrder.append(place)
                packOfMembership.append(number)
                counts[place] += 1
            }
        }
        // Pass 2: prefix sums, then each membership into its tag's run.
        var starts = [Int](repeating: 0, count: counts.count + 1)
        for (place, count) in counts.enumerated() { starts[place + 1] = starts[place] + count }
        var next = Array(starts.dropLast())
        var members = [PackNumber](repeating: PackNumber(0), count: placesInPackOrder.count)
        for (place, number) in zip(placesInPackOrder, packOfMembership) {
            members[next[place]] = number
            next[place] += 1
        }
        self.positions = positions
        self.starts = starts
        self.members = members
        self.numbersByID = numbersByID
    }

    /// Whether the manifest declares `tag` (in its `tags` list; a declared tag may have no pack).
    public func declares(_ tag: Tag) -> Bool {
        positions[tag].map { $0 < declaredCount } ?? false
    }

    /// Every pack whose tag set contains `tag`, in manifest order (as ``Manifest/packs(for:)``).
    public func packs(for tag: Tag) -> [PackNumber] {
        guard let place = positions[tag] else { return [] }
        return Array(members[starts[place]..<starts[place + 1]])
    }

    /// The packs of all `tags`, each once, in the order the tags first name them.
    public func packs(for tags: some Sequence<Tag>) -> [PackNumber] {
        var seen: Set<PackNumber> = []
        var packs: [PackNumber] = []
        for tag in tags {
            for pack in self.packs(for: tag) where seen.insert(pack).inserted { packs.append(pack) }
        }
        return packs
    }

    /// The number of the pack with this id (as ``Manifest/packNumber(of:)``).
    public func packNumber(of id: PackID) -> PackNumber? {
        numbersByID[id]
    }
}
