import FUSEKit
import ODRFSCore

/// How the kernel's view moves from one revision's tree to the next: the new revision's
/// inode numbers and what the kernel must forget.
///
/// Both trees are walked together, directory by directory (children are sorted by name
/// bytes in both indexes, so each directory is one merge). An entry keeps its inode number
/// when its path, kind and attributes are the same and, for a file, its bytes are known to
/// be the same: the same offset in a pack with the same content hash, or — where both
/// indexes record equal SHA-256s — bytes read from both revisions' verified packs and
/// found equal (`sameBytes`, see ``VerifiedFileBytes``). A digest alone decides nothing:
/// the kernel keeps a kept inode's page cache (`keep_cache`), so a new index that gave a
/// changed file the old digest would mix two revisions within one file. For a symlink,
/// the same target. Directories at the same path keep theirs. Everything else gets a
/// fresh number, and the old name is invalidated in the kernel (`staleEntries`), so the
/// next lookup finds the new inode while open handles keep the old one (and the old
/// inode's pages). Directories whose listing or attributes changed are invalidated whole
/// (`staleDirectories`), which drops their cached listing.
struct RevisionTransition: Sendable {
    let inodes: InodeMap
    /// Names to invalidate, by the parent's inode number (the same in both revisions).
    let staleEntries: [(parent: InodeNumber, name: String)]
    let staleDirectories: [InodeNumber]
    /// Files whose inode number was kept.
    let keptFiles: Int
    /// Files whose digests claimed they were unchanged but whose bytes could not be shown
    /// the same (they differ, or a pack of either revision is not local): new files.
    let refusedDigests: Int

    /// `sameBytes(old, new)`: whether the two files' bytes, read from the cache, are equal;
    /// asked only for files whose digests claim so. Blocking: call this on the I/O executor.
    static func make(from old: FileIndex, _ oldInodes: InodeMap, _ oldManifest: Manifest,
                     to new: FileIndex, _ newManifest: Manifest,
                     sameBytes: @escaping (IndexEntry, IndexEntry) -> Bool) -> RevisionTransition {
        var builder = Builder(old: old, oldInodes: oldInodes, oldManifest: oldManifest, new: new, newManifest: newManifest,
                              sameBytes: sameBytes)
        builder.walk()
        let renumbering = InodeRenumbering(inodes: builder.inodes, nextFreeInode: builder.next)
        return RevisionTransition(
            inodes: InodeMap(entryCount: new.entryCount, renumbering: renumbering, following: oldInodes),
            staleEntries: builder.staleEntries, staleDirectories: builder.staleDirectories, keptFiles: builder.keptFiles,
            refusedDigests: builder.refusedDigests)
    }

    private struct Builder {
        let old: FileIndex
        let oldInodes: InodeMap
        let oldManifest: Manifest
        let new: FileIndex
        let newManifest: Manifest
        let sameBytes: (IndexEntry, IndexEntry) -> Bool
        var inodes: [UInt64]
        var next: UInt64
        var staleEntries: [(parent: InodeNumber, name: String)] = []
        var staleDirectories: [InodeNumber] = []
        var keptFiles = 0
        var refusedDigests = 0

        init(old: FileIndex, oldInodes: InodeMap, oldManifest: Manifest, new: FileIndex, newManifest: Manifest,
             sameBytes: @escaping (IndexEntry, IndexEntry) -> Bool) {
            self.old = old
            self.oldInodes = oldInodes
            self.oldManifest = oldManifest
            self.new = new
            self.newManifest = newManifest
            self.sameBytes = sameBytes
            self.inodes = [UInt64](repeating: 0, count: new.entryCount)
            self.next = oldInodes.nextFreeInode
        }

        mutating func walk() {
            // The root is FUSE's inode 1 in every revision.
            inodes[0] = 1
            if old.entry(.root) != new.entry(.root) { staleDirectories.append(InodeNumber(rawValue: 1)) }
            var pairs: [(old: EntryNumber, new: EntryNumber)] = [(.root, .root)]
            while let (oldDirectory, newDirectory) = pairs.popLast() {
                let parent = oldInodes.inode(for: oldDirectory)
                let oldChildren = old.children(of: oldDirectory), newChildren = new.children(of: newDirectory)
                var i = oldChildren.lowerBound, j = newChildren.lowerBound
                var listingChanged = false
                while i < oldChildren.upperBound || j < newChildren.upperBound {
                    let order: Int
                    if i == oldChildren.upperBound { order = 1 } else if j == newChildren.upperBound { order = -1 } else {
                        order = old.withNameBytes(of: EntryNumber(i)) { a in
                            new.withNameBytes(of: EntryNumber(j)) { b in
                                a.elementsEqual(b) ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
                            }
                        }
                    }
                    if order < 0 {
                        // Removed.
                        staleEntries.append((parent, old.name(of: EntryNumber(i))))
                        listingChanged = true
                        i += 1
                    } else if order > 0 {
                        // Added.
                        assignFresh(EntryNumber(j))
                        listingChanged = true
                        j += 1
                    } else {
                        let (o, n) = (EntryNumber(i), EntryNumber(j))
                        if let directories = matchDirectories(o, n) {
                            pairs.append(directories)
                        } else if isSame(o, n) {
                            inodes[Int(n.rawValue)] = oldInodes.inode(for: o).rawValue
                            keptFiles += 1
                        } else {
                            staleEntries.append((parent, old.name(of: o)))
                            assignFresh(n)
                            listingChanged = true
                        }
                        i += 1
                        j += 1
                    }
                }
                if listingChanged, !staleDirectories.contains(parent) { staleDirectories.append(parent) }
            }
        }

        /// Two directories at the same path: the new one keeps the old inode (invalidated if
        /// its attributes changed), and their children are merged next.
        private mutating func matchDirectories(_ o: EntryNumber, _ n: EntryNumber) -> (old: EntryNumber, new: EntryNumber)? {
            guard let a = old.entry(o), let b = new.entry(n), a.kind == .directory, b.kind == .directory else { return nil }
            let inode = oldInodes.inode(for: o)
            inodes[Int(n.rawValue)] = inode.rawValue
            if a.permissions != b.permissions || a.modificationTime != b.modificationTime || a.subdirectoryCount != b.subdirectoryCount {
                staleDirectories.append(inode)
            }
            return (o, n)
        }

        private mutating func isSame(_ o: EntryNumber, _ n: EntryNumber) -> Bool {
            guard let a = old.entry(o), let b = new.entry(n), a.kind == b.kind, a.permissions == b.permissions,
                  a.modificationTime == b.modificationTime, a.size == b.size else { return false }
            switch a.kind {
            case .directory:
                return false
            case .symlink:
                return old.symlinkTarget(of: o) == new.symlinkTarget(of: n)
            case .regularFile:
                // The same place in one verified pack: the same bytes, nothing to read.
                if let p = a.pack, let q = b.pack, let x = oldManifest.packIfPresent(p), let y = newManifest.packIfPresent(q),
                   x.sha256 == y.sha256, a.dataOffset == b.dataOffset { return true }
                // Elsewhere: the indexes' digests only say which files are worth reading.
                guard let x = old.sha256(of: o), let y = new.sha256(of: n), x == y else { return false }
                if sameBytes(a, b) { return true }
                refusedDigests += 1
                return false
            }
        }

        /// A fresh inode number for `entry` and, for a directory, everything under it.
        private mutating func assignFresh(_ entry: EntryNumber) {
            var pending = [entry]
            while let current = pending.popLast() {
                inodes[Int(current.rawValue)] = next
                next += 1
                pending.append(contentsOf: new.children(of: current).map(EntryNumber.init))
            }
        }
    }
}
