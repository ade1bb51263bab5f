import ODRFSCore

extension ResourceManager {
    /// Packs that are local or retained right now: what an update keeps local.
    func localOrRetainedPacks() -> Set<PackNumber> {
        table.read { state in
            var packs: Set<PackNumber> = []
            for (offset, slot) in state.slots.enumerated() where slot.isLocal || slot.retainCount > 0 {
                packs.insert(PackNumber(UInt32(offset)))
            }
            return packs
        }
    }
}

extension ResourceManager {
    /// An update replaced this manager: stop its background purger (the new revision's
    /// manager owns purging from now on; two purgers would race over shared packs) and
    /// save its access times. Its retains stay valid until released. Blocking (SQLite):
    /// I/O executor only.
    func retire() {
        purger.finish()
        // The next revision's table keeps its own; these must not hold purged packs' space.
        table.dropKeptFiles()
        saveAccesses()
        savePriorities()
    }
}

extension ResourceManager {
    /// After an update: a pack of this revision that has not been used yet takes the last
    /// access of the pack with the same id in `previous` (by pack id, i.e. by its tags),
    /// so a changed pack keeps its place in the least-recently-used order. In memory: the
    /// cache index records it with the next access.
    func adoptAccessTimes(from previous: ResourceManager) {
        let times = previous.table.read { state in
            Dictionary(state.slots.indices.compactMap { index in
                state.slots[index].lastAccess.map { (previous.manifest.packs[index].id, $0) }
            }, uniquingKeysWith: max)
        }
        table.adoptAccessTimes(times)
    }
}
