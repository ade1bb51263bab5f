#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension POSIXFile {
    /// The names in a directory, without `.` and `..`, in no particular order.
    static func names(in path: String) throws(SystemCallError) -> [String] {
        guard let dir = opendir(path) else { throw SystemCallError("opendir") }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The size of a regular file, or nil if `path` is not one.
    static func regularFileSize(_ path: String) -> Int64? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Writes `bytes` to a temporary file beside `path`, fsyncs it and renames it over
    /// `path`: readers see the old file or the new one, never a part.
    static func replaceFile(_ path: String, _ bytes: [UInt8], temporary: String) throws(SystemCallError) {
        unlink(temporary)
        try writeFile(temporary, bytes)
        do { try rename(temporary, path) } catch {
            unlink(temporary)
            throw error
        }
    }
}
