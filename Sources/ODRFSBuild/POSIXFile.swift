#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call, with the errno text; wrapped into the user-facing errors.
struct SystemCallError: Error {
    let call: String
    let code: Int32

    init(_ call: String, _ code: Int32 = errno) {
        self.call = call
        self.code = code
    }

    var reason: String { String(cString: strerror(code)) }
}

/// The few file operations the builder needs, on raw file descriptors: errors keep errno, and
/// streaming large files never goes through Foundation's whole-file buffers.
enum POSIXFile {
    static func readAll(_ path: String) throws(SystemCallError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError("open") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemCallError("read")
            }
            if n == 0 { return bytes }
            bytes.append(contentsOf: buffer[0..<n])
        }
    }

    static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemCallError) {
        var rest = buffer[...]
        while !rest.isEmpty {
            let n = write(fd, UnsafeRawBufferPointer(rebasing: rest).baseAddress, rest.count)
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemCallError("write")
            }
            rest = rest.dropFirst(n)
        }
    }

    static func create(_ path: String) throws(SystemCallError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemCallError("open") }
        return fd
    }

    /// Creates `path` with `bytes`, durably: fsynced before it is closed.
    static func writeFile(_ path: String, _ bytes: [UInt8]) throws(SystemCallError) {
        let fd = try create(path)
        defer { close(fd) }
        // withUnsafeBytes rethrows untyped errors; carry ours out through a Result.
        let result = bytes.withUnsafeBytes { buffer in Result { () throws(SystemCallError) in try writeAll(fd, buffer) } }
        try result.get()
        try sync(fd)
    }

    /// Writes `parts` one after the other into a new file at `path`, then syncs it.
    static func writeFile(_ path: String, parts: [[UInt8]]) throws(SystemCallError) {
        let fd = try create(path)
        defer { close(fd) }
        for part in parts {
            let result = part.withUnsafeBytes { buffer in Result { () throws(SystemCallError) in try writeAll(fd, buffer) } }
            try result.get()
        }
        try sync(fd)
    }

    static func sync(_ fd: Int32) throws(SystemCallError) {
        while fsync(fd) != 0 {
            guard errno == EINTR else { throw SystemCallError("fsync") }
        }
    }

    /// Makes the names in a directory durable (after creating or renaming entries in it).
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// Like ``syncDirectory(_:)``, reporting failure: for the output's own directories.
    static func syncDirectoryChecked(_ path: String) throws(SystemCallError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError("open") }
        defer { close(fd) }
        try sync(fd)
    }

    static func makeDirectory(_ path: String, mode: mode_t = 0o755) throws(SystemCallError) {
        guard mkdir(path, mode) == 0 else { throw SystemCallError("mkdir") }
    }

    static func rename(_ from: String, _ to: String) throws(SystemCallError) {
        guard Glibc.rename(from, to) == 0 else { throw SystemCallError("rename") }
    }

    /// Removes `path` and everything beneath it, without following symlinks; best effort.
    static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            if let dir = opendir(path) {
                var names: [String] = []
                while let entry = readdir(dir) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                    if name != "." && name != ".." { names.append(name) }
                }
                closedir(dir)
                for name in names { removeTree(path + "/" + name) }
            }
            rmdir(path)
        } else {
            unlink(path)
        }
    }
}
