import ODRFSStore

/// Open descriptors of local packs, kept between opens: an open of a file whose pack is
/// local used to `open(2)` the pack file and its release `close(2)` it again, two
/// syscalls and a path walk per FUSE open (W2 reads 400 small files of one pack; W7
/// opens 3,200 files of 8 packs just downloaded). Now a local pack's ``VerifiedFile``
/// stays in its slot, for the pack the download just published its own file, and every
/// reader shares it (replies read at explicit offsets, so no position is shared).
///
/// Bounded: at most ``maximumOpenPackFiles`` packs keep a descriptor, the least recently
/// opened one giving way (a bundle has up to 10,000 packs; the daemon's descriptor limit
/// is not that high). A pack that stops being local (evicted, vanished) drops its
/// descriptor at once under the table's lock, so an evicted pack's disk space is freed
/// when its last reader closes, as before. Dropped files are handed back to be released
/// outside the lock where the caller can (`close(2)` runs when the last reference goes).
extension PackTable {
    /// Packs whose descriptor stays open between opens.
    static let maximumOpenPackFiles = 64

    /// The kept descriptor of local pack `index`, if any, marked most recently used.
    static func keptFile(_ index: Int, in state: inout State) -> VerifiedFile? {
        guard state.slots[index].isLocal, let file = state.slots[index].openFile else { return nil }
        if state.openFileOrder.last != index, let position = state.openFileOrder.lastIndex(of: index) {
            state.openFileOrder.remove(at: position)
            state.openFileOrder.append(index)
        }
        return file
    }

    /// Keeps `file` as local pack `index`'s descriptor unless it has one (then returns
    /// that one, so all readers share it). Returns the file to read and the file that
    /// gave way, for the caller to drop outside the lock.
    static func keep(_ file: VerifiedFile, for index: Int, in state: inout State) -> (use: VerifiedFile, dropped: VerifiedFile?) {
        guard state.slots[index].isLocal else { return (file, nil) }
        if let kept = keptFile(index, in: &state) { return (kept, nil) }
        state.slots[index].openFile = file
        state.openFileOrder.append(index)
        guard state.openFileOrder.count > maximumOpenPackFiles else { return (file, nil) }
        let oldest = state.openFileOrder.removeFirst()
        let dropped = state.slots[oldest].openFile
        state.slots[oldest].openFile = nil
        return (file, dropped)
    }

    /// Forgets pack `index`'s descriptor (it stops being local); returns it, so that the
    /// caller can let it go outside the lock.
    @discardableResult
    static func dropKeptFile(_ index: Int, in state: inout State) -> VerifiedFile? {
        guard let file = state.slots[index].openFile else { return nil }
        state.slots[index].openFile = nil
        state.openFileOrder.removeAll { $0 == index }
        return file
    }

    /// Forgets every kept descriptor (a retired revision's table).
    func dropKeptFiles() {
        let dropped = withState { state -> [VerifiedFile] in
            let files = state.openFileOrder.compactMap { state.slots[$0].openFile }
            for index in state.openFileOrder { state.slots[index].openFile = nil }
            state.openFileOrder.removeAll()
            return files
        }
        _ = dropped
    }
}
