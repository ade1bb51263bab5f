#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `syncfs(2)`: writes back every dirty page and inode of one filesystem and waits, as one
/// journal commit. A build writing 10,000 new packs spent about a minute in 10,000 separate
/// fsyncs; one syncfs makes them all durable at once. Glibc declares it only under
/// `_GNU_SOURCE`, which the Swift Glibc module does not set, so it is looked up at run time;
/// where it is missing callers fsync file by file.
enum FilesystemSync {
    private typealias SyncFS = @convention(c) (Int32) -> Int32

    private static let function: SyncFS? = {
        #if os(Linux)
        guard let symbol = dlsym(nil, "syncfs") else { return nil }
        return unsafeBitCast(symbol, to: SyncFS.self)
        #else
        return nil
        #endif
    }()

    /// Syncs the filesystem that holds `path`; false when the call is missing or fails
    /// (since Linux 5.8 it reports writeback errors), so that the caller falls back to fsync.
    static func sync(filesystemOf path: String) -> Bool {
        guard let function else { return false }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return function(fd) == 0
    }
}
