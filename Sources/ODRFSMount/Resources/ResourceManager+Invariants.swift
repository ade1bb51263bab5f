extension ResourceManager {
    /// Runs `body` under the lock; in debug builds, checks the invariants (documented on
    /// ``ResourceManager``) before the lock is released, so a bookkeeping bug fails the
    /// test that caused it instead of drifting silently.
    func withState<Value: Sendable>(_ body: (inout State) -> Value) -> Value {
        state.withLock { state in
            let value = body(&state)
            #if DEBUG
            checkInvariants(state)
            #endif
            return value
        }
    }

    #if DEBUG
    private func checkInvariants(_ state: State) {
        var cached: Int64 = 0
        var reserved: Int64 = 0
        var inUse: Int64 = 0
        for (index, slot) in state.slots.enumerated() {
            let bytes = manifest.packs[index].bytes.value
            precondition(slot.retainCount >= 0, "negative retain count for pack \(manifest.packs[index].id)")
            precondition(!(slot.isLocal && slot.download != nil), "pack \(manifest.packs[index].id) is local and downloading")
            if slot.isLocal { cached += bytes }
            if slot.download != nil { reserved += bytes }
            if slot.retainCount > 0 { inUse += bytes }
        }
        cached += state.orphans.values.reduce(0) { $0 + $1.bytes }
        precondition(cached == state.cachedBytes, "cachedBytes \(state.cachedBytes) but local packs and orphans add up to \(cached)")
        precondition(reserved == state.reservedBytes, "reservedBytes \(state.reservedBytes) but downloads add up to \(reserved)")
        precondition(inUse == state.inUseBytes, "inUseBytes \(state.inUseBytes) but retained packs add up to \(inUse)")
    }
    #endif
}
