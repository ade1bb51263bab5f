/// Symlink containment: every symlink target, resolved the way the kernel will resolve it at
/// the mount point (from the link's own directory, following other symlinks of the bundle),
/// must stay inside the bundle. Otherwise `cat MNT/x` could read the host's `/etc/passwd`
/// through `x -> d/s/../../etc/passwd` with `d/s -> ..`: counting `..` in one target is not
/// enough, chains of links must be followed.
///
/// Each symlink's resolution does not depend on who follows it (a target is always resolved
/// from the link's own directory), so it is computed once and memoised: O(total target
/// bytes) for the whole index, however links chain; that total is bounded by
/// ``BundleLimits/maxSymlinkTargetBytes``.
extension FileIndex {
    /// The end of resolving a path inside the bundle.
    enum Resolution: Equatable {
        /// An existing entry (a directory or file), or `below` unknown names under that
        /// directory (resolved lexically: they may be the mount's virtual `.odrfs`).
        case entry(UInt32, below: Int)
        /// A missing name, a file used as a directory or a loop: the kernel answers ENOENT,
        /// ENOTDIR or ELOOP there, which is harmless.
        case dead
        /// A `..` above the bundle root.
        case escapes
        /// More than ``BundleLimits/maxSymlinkHops`` links deep (the kernel would answer
        /// ELOOP); refused rather than followed further.
        case tooDeep
    }

    /// Longest symlink target: what `readlink` on the mount can return (PATH_MAX - 1).
    public static let maxSymlinkTargetBytes = 4095

    func validateSymlinks() throws(FileIndexError) {
        // Resolution costs one lookup per target component; targets may share string bytes,
        // so bound their total to keep a hostile index from stalling the mount.
        var total = 0
        for n in 0..<count where kind(n) == .symlink {
            total += symlinkBytes(n).count   // each ≤ UInt32.max, at most 2^32 entries: no overflow in Int
            guard total <= BundleLimits.maxSymlinkTargetBytes.value else {
                throw FileIndexError(.corrupt, "symlink targets add up to more than \(BundleLimits.maxSymlinkTargetBytes.value) bytes")
            }
        }
        var memo: [UInt32: Resolution] = [:]
        for n in 0..<count where kind(n) == .symlink {
            switch resolveLink(n, depth: 0, memo: &memo) {
            case .entry, .dead: continue
            case .escapes, .tooDeep:
                let bytes = symlinkBytes(n)
                let target = String(decoding: bytes.prefix(200), as: UTF8.self)
                let why = bytes.count > Self.maxSymlinkTargetBytes ? "is longer than \(Self.maxSymlinkTargetBytes) bytes"
                    : bytes.first == UInt8(ascii: "/") ? "is absolute" : "leaves the bundle"
                var error = FileIndexError(.unsafeSymlink, "entry \(n) ('\(path(of: EntryNumber(n)))') is a symlink to '\(target)', which \(why)")
                error.entry = path(of: EntryNumber(n))
                throw error
            }
        }
    }

    @inline(__always) private func symlinkBytes(_ n: UInt32) -> UnsafeRawBufferPointer {
        let r = record(n)
        return strings(offset: r.u64(FileIndexLayout.Record.data), length: r.u32(FileIndexLayout.Record.count))
    }

    @inline(__always) private func parent(_ n: UInt32) -> UInt32 {
        record(n).u32(FileIndexLayout.Record.parent)
    }

    /// Where symlink `n` leads, resolved from its own directory.
    private func resolveLink(_ n: UInt32, depth: Int, memo: inout [UInt32: Resolution]) -> Resolution {
        if let known = memo[n] { return known }
        guard depth < BundleLimits.maxSymlinkHops else { return .tooDeep }
        let target = symlinkBytes(n)
        if target.isEmpty || target.count > Self.maxSymlinkTargetBytes || target[0] == UInt8(ascii: "/") {
            return .escapes
        }
        // A loop comes back here before finishing and sees `.dead` (ELOOP).
        memo[n] = .dead
        let result = resolve(target, from: parent(n), depth: depth, memo: &memo)
        // tooDeep depends on where the chain was entered: not a fact about `n`.
        memo[n] = result == .tooDeep ? nil : result
        return result
    }

    /// Resolves a relative path from directory `start`, component by component.
    private func resolve(_ path: UnsafeRawBufferPointer, from start: UInt32, depth: Int,
                         memo: inout [UInt32: Resolution]) -> Resolution {
        var current = start
        // Names below `current` that the index does not have, counted lexically: the mount
        // adds a virtual top-level `.odrfs` directory, so "missing" is not proof of ENOENT
        // and ".." back out of an unknown name must still be followed.
        var unknownDepth = 0
        var position = 0
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        while position < path.count {
            var end = position
            while end < path.count && path[end] != slash { end += 1 }
            let component = UnsafeRawBufferPointer(rebasing: path[position..<end])
            position = end + 1
            if component.isEmpty || (component.count == 1 && component[0] == dot) { continue }
            if component.count == 2 && component[0] == dot && component[1] == dot {
                if unknownDepth > 0 {
                    unknownDepth -= 1
                } else {
                    guard current != 0 else { return .escapes }
                    current = parent(current)
                }
                continue
            }
            guard unknownDepth == 0, let child = lookup(parent: EntryNumber(current), name: component)?.rawValue else {
                unknownDepth += 1
                continue
            }
            var found = child
            if kind(child) == .symlink {
                switch resolveLink(child, depth: depth + 1, memo: &memo) {
                case .entry(let target, let below) where below > 0:
                    current = target
                    unknownDepth = below
                    continue
                case .entry(let target, _): found = target
                case let other: return other
                }
            }
            guard kind(found) == .directory else {
                // A file: the end of the path, or ENOTDIR for anything after it.
                return path[min(position, path.count)...].allSatisfy { $0 == slash } ? .entry(found, below: 0) : .dead
            }
            current = found
        }
        return .entry(current, below: unknownDepth)
    }
}
