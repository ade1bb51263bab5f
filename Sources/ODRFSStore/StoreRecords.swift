import Foundation
import ODRFSCore

extension StoreConfiguration {
    /// Reads the store's configuration; an absent file is the default (no limits), a
    /// damaged one an error naming it. Blocking: on an I/O executor or in a command.
    public static func read(storeRoot root: String) throws(StoreError) -> StoreConfiguration {
        let path = root + "/" + fileName
        guard let data = PackStore.boundedContents(of: path, limit: limit) else {
            if access(path, F_OK) != 0 { return StoreConfiguration() }
            throw StoreError(.io, "cannot read \(path) (at most \(limit) bytes)")
        }
        guard let configuration = StoreConfiguration(parsing: data) else {
            throw StoreError(.io, "\(path) is not a store configuration (JSON with cache_size and min_free, non-negative)")
        }
        return configuration
    }

    /// Writes the configuration atomically (a temporary file, fsync, rename).
    public func write(storeRoot root: String) throws(StoreError) {
        let path = root + "/" + Self.fileName
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { throw StoreError(.io, "cannot encode the store configuration") }
        try PackStore.writeAtomically(data, to: path)
    }
}

extension PackStore {
    /// Records this mount for the operator's tools: `mounts/<id>/mount.json`, and the origin
    /// of the bundle in `bundles/<key>/origin`. Blocking: on the I/O executor. Best effort.
    public func recordMount(mountpoint: String, origin: String, now: Date = Date()) {
        guard isShared else { return }
        let bundle = (layout.bundleRoot as NSString).lastPathComponent
        let record = MountRecord(pid: getpid(), mountpoint: mountpoint, origin: origin, bundle: bundle, started: now)
        if let data = try? JSONEncoder().encode(record) {
            try? Self.writeAtomically(data, to: layout.workRoot + "/mount.json")
        }
        try? Self.writeAtomically(Data(origin.utf8), to: layout.bundleRoot + "/origin")
    }

    /// The contents of the regular file at `path` if it holds at most `limit` bytes (no
    /// symlink followed); nil otherwise.
    public static func boundedContents(of path: String, limit: Int) -> Data? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= limit else { return nil }
        var data = Data(count: Int(info.st_size))
        let count = data.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count == data.count else { return nil }
        return data
    }

    /// Writes `data` to `path` through a temporary file beside it (mode 0600), fsynced, renamed.
    static func writeAtomically(_ data: Data, to path: String) throws(StoreError) {
        let temporary = path + ".new." + String(getpid())
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.system("cannot create", path: temporary) }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced, rename(temporary, path) == 0 else {
            let error = StoreError.system("cannot write", path: path)
            unlink(temporary)
            throw error
        }
    }
}
