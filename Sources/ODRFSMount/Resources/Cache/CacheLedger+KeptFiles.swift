import ODRFSStore

extension CacheLedger {
    /// Open descriptors of local packs, kept between opens: an open of a file whose pack is
    /// local used to `open(2)` the pack file and its release `close(2)` it again, two
    /// syscalls and a path walk per FUSE open (W2 reads 400 small files of one pack; W7
    /// opens 3,200 files of 8 packs just downloaded). Now a local pack's ``VerifiedFile``
    /// stays here, for the pack the download just published its own file, and every
    /// reader shares it (replies read at explicit offsets, so no position is shared).
    ///
    /// Bounded: at most ``maximumOpenPackFiles`` packs keep a descriptor, the least recently
    /// opened one giving way (a bundle has up to 10,000 packs; the daemon's descriptor limit
    /// is not that high). A pack that stops being local (evicted, vanished) drops its
    /// descriptor at once under the ledger's lock, so an evicted pack's disk space is freed
    /// when its last reader closes, as before. Dropped files are handed back to be released
    /// outside the lock where the caller can (`close(2)` runs when the last reference goes).
    /// Part of the ledger's state: only ``State``'s intents call these.
    struct KeptFiles {
        /// Packs whose descriptor stays open between opens.
        static let maximumOpenPackFiles = 64

        private(set) var files: [Int: VerifiedFile] = [:]
        /// Packs with a kept file, least recently opened first.
        private(set) var order: [Int] = []

        /// Pack `index`'s kept descriptor, if any, marked most recently used.
        mutating func touch(_ index: Int) -> VerifiedFile? {
            guard let file = files[index] else { return nil }
            if order.last != index, let position = order.lastIndex(of: index) {
                order.remove(at: position)
                order.append(index)
            }
            return file
        }

        /// Keeps `file` for pack `index` unless it has one (then returns that one, so all
        /// readers share it). Returns the file to read and the file that gave way.
        mutating func keep(_ file: VerifiedFile, for index: Int) -> (use: VerifiedFile, dropped: VerifiedFile?) {
            if let kept = touch(index) { return (kept, nil) }
            files[index] = file
            order.append(index)
            guard order.count > Self.maximumOpenPackFiles else { return (file, nil) }
            let oldest = order.removeFirst()
            return (file, files.removeValue(forKey: oldest))
        }

        /// Forgets pack `index`'s descriptor; returns it, to be let go outside the lock.
        @discardableResult
        mutating func drop(_ index: Int) -> VerifiedFile? {
            guard let file = files.removeValue(forKey: index) else { return nil }
            order.removeAll { $0 == index }
            return file
        }

        /// Forgets every kept descriptor.
        mutating func dropAll() -> [VerifiedFile] {
            defer { files = [:]; order = [] }
            return order.compactMap { files[$0] }
        }
    }
}
