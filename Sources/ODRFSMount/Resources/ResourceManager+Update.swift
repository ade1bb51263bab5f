import ODRFSCore

extension ResourceManager {
    /// Packs that are local or retained right now: what an update keeps local.
    func localOrRetainedPacks() -> Set<PackNumber> {
        table.withState { state in
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
        saveAccesses()
        savePriorities()
    }
}
