#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ODRFSCore

/// The dist dir being (re)built, and the rules for touching it: the new tree is assembled in a
/// hidden sibling (same filesystem, so the final rename is atomic), fsynced, and swapped in
/// only when complete, with `renameat2(RENAME_EXCHANGE)` so that a kill at any instant
/// leaves a complete dist dir at the path; an existing directory is replaced only if it is
/// empty or a previous dist dir (holds a manifest.json), so a typo in `-o` cannot wipe
/// unrelated data.
struct OutputDirectory {
    let path: String
    let parent: String
    let name: String

    init(path: String, resourceRoot: String) throws(BuildError) {
        guard !path.isEmpty else { throw BuildError(.outputNotReplaceable, path: path, "the output directory path is empty") }
        self.path = path
        if let slash = path.lastIndex(of: "/") {
            parent = slash == path.startIndex ? "/" : String(path[..<slash])
            name = String(path[path.index(after: slash)...])
        } else {
            parent = "."
            name = path
        }
        guard name != "." && name != ".." && name != "/" && !name.isEmpty else {
            throw BuildError(.outputNotReplaceable, path: path, "'\(path)' cannot be an output directory; name a directory such as 'dist'")
        }
        // Compare resolved paths: the output must not be the root, inside it (the next build
        // would pack the last one) or contain it (replacing it would delete the resources).
        guard let realRoot = BundleBuilder.realPath(resourceRoot), let realParent = BundleBuilder.realPath(parent) else { return }
        let realOutput = (realParent == "/" ? "" : realParent) + "/" + name
        if realOutput == realRoot || realOutput.hasPrefix(realRoot + "/") || realRoot.hasPrefix(realOutput + "/") {
            throw BuildError(.outputInsideResourceRoot, path: path,
                             "output directory '\(path)' overlaps the resource directory '\(resourceRoot)'; write the dist dir elsewhere")
        }
    }

    /// Throws unless the output is absent, an empty directory, or a previous dist dir.
    func checkReplaceable() throws(BuildError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            guard errno == ENOENT else { throw BuildError.io(SystemCallError("lstat"), "examine", path) }
            var parentInfo = stat()
            guard stat(parent, &parentInfo) == 0, (parentInfo.st_mode & S_IFMT) == S_IFDIR else {
                throw BuildError(.io, path: path, "cannot create '\(path)': its parent directory '\(parent)' does not exist")
            }
            return
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw BuildError(.outputNotReplaceable, path: path, "'\(path)' exists and is not a directory; refusing to replace it")
        }
        if access(path + "/" + Manifest.fileName, F_OK) == 0 { return }
        guard let dir = opendir(path) else { throw BuildError.io(SystemCallError("opendir"), "read", path) }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if bytes != [0x2E] && bytes != [0x2E, 0x2E] {
                throw BuildError(.outputNotReplaceable, path: path,
                                 "'\(path)' exists, is not empty and holds no \(Manifest.fileName); refusing to replace it (remove it or choose another output directory)")
            }
        }
    }

    /// A staging directory and the `flock` that marks it as in use by a live build: a build
    /// killed before it cleaned up leaves an unlocked one, which the next build removes.
    struct Staging {
        let path: String
        let lock: Int32

        func release() { close(lock) }
    }

    func makeStagingDirectory() throws(BuildError) -> Staging {
        let path = try makeSibling("building")
        let lock = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard lock >= 0, flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            let error = SystemCallError("flock")
            if lock >= 0 { close(lock) }
            POSIXFile.removeTree(path)
            throw BuildError.io(error, "lock the temporary directory", path)
        }
        return Staging(path: path, lock: lock)
    }

    /// Removes the hidden siblings (`.NAME.odrfs-building-*`, `.NAME.odrfs-old-*`) of builds
    /// that were killed: those no live build holds locked.
    func removeStaleSiblings() {
        guard let dir = opendir(parent) else { return }
        var candidates: [String] = []
        let prefix = ".\(name).odrfs-"
        while let entry = readdir(dir) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if entryName.hasPrefix(prefix) { candidates.append(parent + "/" + entryName) }
        }
        closedir(dir)
        for candidate in candidates {
            let fd = open(candidate, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            // Removed while locked, so a build that starts meanwhile cannot be using it.
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { POSIXFile.removeTree(candidate) }
            close(fd)
        }
    }

    private func makeSibling(_ purpose: String) throws(BuildError) -> String {
        var template = Array("\(parent)/.\(name).odrfs-\(purpose)-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw BuildError.io(SystemCallError("mkdtemp"), "create a temporary directory in", parent)
        }
        let staging = String(cString: made)
        chmod(staging, 0o755)   // mkdtemp makes 0700; a dist dir is meant to be served
        return staging
    }

    /// Moves the finished (and fsynced) staging directory into place, replacing a previous
    /// output so that the path always names a complete dist dir: an atomic exchange where
    /// the system has one, else the previous output is parked for the instant between two
    /// renames. The parent directory is fsynced so that the new name survives a crash.
    func publish(_ staging: String) throws(BuildError) {
        try checkReplaceable()   // it may have changed while we were building
        defer { POSIXFile.syncDirectory(parent) }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            do { try POSIXFile.rename(staging, path) } catch { throw BuildError.io(error, "move the new dist dir to", path) }
            return
        }
        switch AtomicExchange.exchange(staging, path) {
        case .exchanged:
            // The previous output now sits at the staging path, still locked by this build.
            POSIXFile.removeTree(staging)
            return
        case .failed(let error):
            throw BuildError.io(error, "swap the new dist dir with", path)
        case .unsupported:
            break
        }
        // rename(2) onto an empty directory replaces it; park the old output there first so that
        // a failure of the second rename can put it back.
        let parked = try makeSibling("old")
        do { try POSIXFile.rename(path, parked) } catch {
            rmdir(parked)
            throw BuildError.io(error, "move aside the previous output", path)
        }
        do { try POSIXFile.rename(staging, path) } catch {
            _ = try? POSIXFile.rename(parked, path)
            throw BuildError.io(error, "move the new dist dir to", path)
        }
        POSIXFile.removeTree(parked)
    }
}
