import ODRFSStore

extension CacheLedger.State {
    /// What the cache holds against `--cache-size`: local packs, their backing files,
    /// orphans and the pinned metadata (file indexes, manifest). Saturating: the metadata
    /// figure is whatever the filesystem reported.
    var budgetedBytes: Int64 {
        let (sum, overflow) = cachedBytes.addingReportingOverflow(metadataBytes)
        return overflow ? .max : sum
    }

    /// Bytes of the orphans (packs of other bundle versions).
    var orphanBytes: Int64 { orphans.values.reduce(0) { $0 + $1.bytes } }

    /// The ledger's invariants, as broken in this state (empty: all hold). Checked after
    /// every transaction in debug builds and, in every build, by the ledger's tests:
    /// retain counts never negative; a pack never local and downloading at once; a kept
    /// descriptor only for a local pack; `cachedBytes` the sum of local packs', backing
    /// files' and orphans' bytes; `reservedBytes` that of the downloads in flight;
    /// `inUseBytes` that of the retained packs.
    func violations() -> [String] {
        var found: [String] = []
        var cached: Int64 = 0
        var reserved: Int64 = 0
        var inUse: Int64 = 0
        for (index, slot) in slots.enumerated() {
            let pack = manifest.packs[index]
            if slot.retainCount < 0 { found.append("negative retain count for pack \(pack.id)") }
            if slot.isLocal && slot.download != nil { found.append("pack \(pack.id) is local and downloading") }
            if slot.isLocal { cached += pack.bytes.value }
            cached += slot.backingBytes
            if slot.download != nil { reserved += pack.bytes.value }
            if slot.retainCount > 0 { inUse += pack.bytes.value }
            if keptFiles.files[index] != nil && !slot.isLocal { found.append("pack \(pack.id) keeps a descriptor but is not local") }
        }
        if keptFiles.order.count > CacheLedger.KeptFiles.maximumOpenPackFiles { found.append("\(keptFiles.order.count) kept pack descriptors") }
        if keptFiles.order.count != keptFiles.files.count { found.append("kept descriptors and their order disagree") }
        cached += orphanBytes
        if cached != cachedBytes { found.append("cachedBytes \(cachedBytes) but local packs and orphans add up to \(cached)") }
        if reserved != reservedBytes { found.append("reservedBytes \(reservedBytes) but downloads add up to \(reserved)") }
        if inUse != inUseBytes { found.append("inUseBytes \(inUseBytes) but retained packs add up to \(inUse)") }
        return found
    }
}
