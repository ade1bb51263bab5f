#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ODRFSCore

/// The dist dir being built, and the rules for touching it. A dist dir accumulates
/// revisions: packs and indexes are content-addressed (`packs/<sha256>.tar`,
/// `index/<sha256>.odrx`), written under temporary names, fsynced and renamed into place,
/// and never rewritten; `manifest.json` is the one switch point, replaced last by a rename,
/// so a kill at any instant leaves the previous revision (or the new one) complete and
/// servable. `manifests/<revision>.json` records the manifests of the kept revisions, which
/// ``prune(keeping:current:)`` uses to remove the objects no kept revision names.
///
/// An existing directory is used only if it is empty or a previous dist dir (holds a
/// manifest.json, or only the dist dir's own subdirectories: a first build killed before
/// its manifest), so a typo in `-o` cannot fill or prune unrelated data. One build at a time
/// writes a dist dir: it holds an exclusive `flock` on the directory.
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

    /// The names a dist dir holds besides `manifest.json` and its signature.
    static let packsDirectory = "packs"
    static let indexDirectory = "index"
    static let manifestsDirectory = "manifests"
    /// Every temporary file of a build starts with this; a build removes the ones it finds
    /// (under the lock, any such file is a killed build's).
    static let temporaryPrefix = ".odrfs-tmp-"

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
        let own: Set<String> = [Self.packsDirectory, Self.indexDirectory, Self.manifestsDirectory, ManifestSignature.fileName]
        let names: [String]
        do { names = try POSIXFile.names(in: path) } catch { throw BuildError.io(error, "read", path) }
        for name in names where !own.contains(name) && !name.hasPrefix(Self.temporaryPrefix) {
            throw BuildError(.outputNotReplaceable, path: path,
                             "'\(path)' exists, is not empty and holds no \(Manifest.fileName); refusing to replace it (remove it or choose another output directory)")
        }
    }

    /// The dist dir opened for writing: its directory descriptor holds the build's `flock`.
    struct Lock {
        let descriptor: Int32
        /// Whether this build created the dist dir (so a failed first build removes it).
        let created: Bool

        func release() { close(descriptor) }
    }

    /// Creates the dist dir and its subdirectories as needed, locks it against other builds,
    /// and removes what killed builds left: temporary files inside it, and the hidden
    /// siblings of the builds that swapped whole directories.
    func open() throws(BuildError) -> Lock {
        try checkReplaceable()
        var created = false
        if mkdir(path, 0o755) == 0 {
            created = true
            POSIXFile.syncDirectory(parent)
        } else if errno != EEXIST {
            throw BuildError.io(SystemCallError("mkdir"), "create", path)
        }
        let descriptor = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw BuildError.io(SystemCallError("open"), "open", path) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let error = SystemCallError("flock")
            close(descriptor)
            if error.code == EWOULDBLOCK {
                throw BuildError(.outputNotReplaceable, path: path, "another odrfs build is writing '\(path)'; wait for it to finish")
            }
            throw BuildError.io(error, "lock", path)
        }
        for directory in [Self.packsDirectory, Self.indexDirectory, Self.manifestsDirectory] {
            let full = path + "/" + directory
            guard mkdir(full, 0o755) == 0 || errno == EEXIST else {
                let error = SystemCallError("mkdir")
                close(descriptor)
                throw BuildError.io(error, "create", full)
            }
            // Objects are written and pruned inside: a symlink would take both elsewhere.
            var info = stat()
            guard lstat(full, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
                close(descriptor)
                throw BuildError(.outputNotReplaceable, path: full, "'\(full)' is not a directory (a symlink?); refusing to write or prune through it")
            }
        }
        removeTemporaries()
        removeStaleSiblings()
        return Lock(descriptor: descriptor, created: created)
    }

    /// Removes the hidden siblings (`.NAME.odrfs-building-*`, `.NAME.odrfs-old-*`) that
    /// builds of earlier versions, which swapped whole directories, left when killed: those
    /// no live build holds locked.
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
            let fd = Glibc.open(candidate, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            // Removed while locked, so a build that starts meanwhile cannot be using it.
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { POSIXFile.removeTree(candidate) }
            close(fd)
        }
    }
}
