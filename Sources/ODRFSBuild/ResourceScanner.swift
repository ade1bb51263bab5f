#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ODRFSCore

/// A regular file found under the resource root, in scan order.
struct ScannedFile: Sendable {
    /// Relative path, "/"-separated.
    var path: String
    var size: UInt64
    var permissions: UInt32
    var modificationTime: Timestamp

    /// The path's components, made when asked: kept for every file they cost more than the
    /// file's other fields together (an array and two substrings, 1.1 GB at ten million files).
    var components: [Substring] { path.slashSeparated() }
}

/// The scanned resource tree: the directory tree (with files not yet assigned to packs) and the
/// flat list of regular files, both in deterministic order (names sorted by bytes).
struct ResourceTree: Sendable {
    var root: FileIndexWriter.Node
    var files: [ScannedFile]
    /// Relative paths of every entry (directories, files, symlinks), for pattern-match warnings.
    var allPaths: [String]
}

/// Walks a resource root with lstat, never following symlinks, and refuses what a bundle cannot
/// hold: special files, symlinks that leave the root, non-UTF-8 names, a top-level `.odrfs`.
struct ResourceScanner {
    /// Reserved at the top of a mount for its virtual status directory.
    static let reservedTopLevelName = ".odrfs"

    let root: String
    /// The spec file's path relative to the root, when it lives inside it; it is not a resource.
    let skippedPath: String?

    func scan() throws(BuildError) -> ResourceTree {
        var info = stat()
        guard stat(root, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw BuildError(.resourceRootNotDirectory, path: root, "resource directory '\(root)' does not exist or is not a directory")
        }
        var files: [ScannedFile] = []
        var allPaths: [String] = []
        var rootNode = FileIndexWriter.Node.directory("", permissions: UInt32(info.st_mode) & 0o7777,
                                                      modificationTime: Self.mtime(info))
        rootNode.children = try scanDirectory(relative: "", into: &files, allPaths: &allPaths)
        return ResourceTree(root: rootNode, files: files, allPaths: allPaths)
    }

    private func display(_ relative: String) -> String {
        relative.isEmpty ? root : (root.hasSuffix("/") ? root : root + "/") + relative
    }

    private func scanDirectory(relative: String, into files: inout [ScannedFile],
                               allPaths: inout [String]) throws(BuildError) -> [FileIndexWriter.Node] {
        let names = try listDirectory(relative)
        var nodes: [FileIndexWriter.Node] = []
        for name in names {
            let path = relative.isEmpty ? name : relative + "/" + name
            if path == skippedPath { continue }
            if relative.isEmpty && name == Self.reservedTopLevelName {
                throw BuildError(.reservedName, path: display(path),
                                 "'\(display(path))': the top-level name '.odrfs' is reserved for the mount's status directory; rename it")
            }
            var info = stat()
            guard lstat(display(path), &info) == 0 else {
                throw BuildError.io(SystemCallError("lstat"), "examine", display(path))
            }
            let permissions = UInt32(info.st_mode) & 0o7777
            let mtime = Self.mtime(info)
            allPaths.append(path)
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                files.append(ScannedFile(path: path, size: UInt64(info.st_size),
                                         permissions: permissions, modificationTime: mtime))
                var node = FileIndexWriter.Node.file(name, size: UInt64(info.st_size), pack: .base, dataOffset: 0,
                                                     permissions: permissions, modificationTime: mtime)
                node.pack = nil   // assigned once packs are planned
                nodes.append(node)
            case S_IFDIR:
                var node = FileIndexWriter.Node.directory(name, permissions: permissions, modificationTime: mtime)
                node.children = try scanDirectory(relative: path, into: &files, allPaths: &allPaths)
                nodes.append(node)
            case S_IFLNK:
                let target = try readSymlink(path)
                nodes.append(.symlink(name, target: target, permissions: permissions, modificationTime: mtime))
            default:
                throw BuildError(.unsupportedFileType, path: display(path),
                                 "'\(display(path))' is a \(Self.typeName(info.st_mode)); a bundle can only hold regular files, directories and symlinks")
            }
        }
        return nodes
    }

    private func listDirectory(_ relative: String) throws(BuildError) -> [String] {
        guard let dir = opendir(display(relative)) else {
            let error = SystemCallError("opendir")
            throw BuildError(.unreadable, path: display(relative), "cannot read directory '\(display(relative))': \(error.reason)")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
            guard let name = String(validating: bytes, as: UTF8.self) else {
                let shown = String(decoding: bytes, as: UTF8.self)
                throw BuildError(.invalidName, path: display(relative),
                                 "'\(display(relative))' holds a name that is not valid UTF-8 (\"\(shown)\"); rename it")
            }
            names.append(name)
        }
        return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    private func readSymlink(_ relative: String) throws(BuildError) -> String {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = buffer.withUnsafeMutableBytes { readlink(display(relative), $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count) }
        guard n >= 0 else { throw BuildError.io(SystemCallError("readlink"), "read symlink", display(relative)) }
        guard let target = String(validating: buffer[0..<n], as: UTF8.self), !target.isEmpty else {
            throw BuildError(.invalidName, path: display(relative), "symlink '\(display(relative))' has an empty or non-UTF-8 target")
        }
        if target.hasPrefix("/") {
            throw BuildError(.symlinkOutsideRoot, path: display(relative),
                             "symlink '\(display(relative))' points to the absolute path '\(target)'; use a relative target inside the resource directory")
        }
        // Whether a relative target stays inside depends on the other links it passes
        // through: checked on the whole tree by ResourceTree.checkSymlinks.
        return target
    }

    static func mtime(_ info: stat) -> Timestamp {
        Timestamp(seconds: Int64(info.st_mtim.tv_sec), nanoseconds: UInt32(clamping: info.st_mtim.tv_nsec))
    }

    static func typeName(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: return "named pipe (FIFO)"
        case S_IFSOCK: return "socket"
        case S_IFCHR: return "character device"
        case S_IFBLK: return "block device"
        default: return "file of unknown type"
        }
    }
}
