/// A manifest's tag → packs and pack id → number relations as dictionaries, built once in
/// one pass over the packs' tag sets.
///
/// ``Manifest/packs(for:)`` and ``Manifest/packNumber(of:)`` scan every pack, which is
/// fine once but not per tag: a bundle with a tag per level has thousands of tags and as
/// many packs, and the mount asks for every prefetch tag, every initial-install tag and
/// every requested tag (10,000 tags × 10,000 packs = 10^8 comparisons at mount). Built from
/// a validated manifest, which it does not change.
public struct TagPackIndex: Sendable {
    private let packsByTag: [Tag: [PackNumber]]
    private let numbersByID: [PackID: PackNumber]
    private let declared: Set<Tag>

    public init(_ manifest: Manifest) {
        var packsByTag: [Tag: [PackNumber]] = [:]
        var numbersByID: [PackID: PackNumber] = [:]
        numbersByID.reserveCapacity(manifest.packs.count)
        for (offset, pack) in manifest.packs.enumerated() {
            let number = PackNumber(UInt32(truncatingIfNeeded: offset))
            numbersByID[pack.id] = number
            for tag in pack.tags where packsByTag[tag]?.last != number {
                packsByTag[tag, default: []].append(number)
            }
        }
        self.packsByTag = packsByTag
        self.numbersByID = numbersByID
        declared = Set(manifest.tags.map(\.tag))
    }

    /// Whether the manifest declares `tag` (in its `tags` list; a declared tag may have no pack).
    public func declares(_ tag: Tag) -> Bool {
        declared.contains(tag)
    }

    /// Every pack whose tag set contains `tag`, in manifest order (as ``Manifest/packs(for:)``).
    public func packs(for tag: Tag) -> [PackNumber] {
        packsByTag[tag] ?? []
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
