import Foundation

/// The folder of bundle configurations, `/etc/odrfs/bundles.d`, or the one
/// `ODRFS_BUNDLES_DIR` names (tests, a private autofs map), and the one way a
/// `NAME.conf` in it is read: by a checked ``BundleName``, without following a symbolic
/// link, only a regular file of bounded size, and for root only a file no other user could
/// have written (it names token files and a cache directory root will use).
///
/// Reads block: this is for the command line (`odrfs config`, `mount.odrfs`, the autofs
/// map), never for the daemon's cooperative threads.
public struct BundleDirectory: Sendable {
    public static let defaultPath = "/etc/odrfs/bundles.d"
    public static let environmentVariable = "ODRFS_BUNDLES_DIR"

    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// `ODRFS_BUNDLES_DIR` if set and absolute, else `/etc/odrfs/bundles.d`.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let override = environment[Self.environmentVariable] ?? ""
        self.init(path: override.hasPrefix("/") ? override : Self.defaultPath)
    }

    public func configurationPath(for name: BundleName) -> String {
        path + "/" + name.rawValue + ".conf"
    }

    /// Why a bundle could not be loaded.
    public enum LoadError: Error, Sendable, CustomStringConvertible {
        /// No `NAME.conf`: not a configured bundle (autofs answers ENOENT without a word).
        case notConfigured(path: String)
        /// The file exists but cannot be used (a link, not a regular file, unsafe owner).
        case unreadable(path: String, reason: String)
        /// The file's contents are refused.
        case invalid(path: String, BundleConfigurationError)

        public var description: String {
            switch self {
            case .notConfigured(let path): "no configuration \(path)"
            case .unreadable(let path, let reason): "\(path): \(reason)"
            case .invalid(let path, let error): "\(path): \(error)"
            }
        }
    }

    public func load(_ name: BundleName) throws(LoadError) -> BundleConfiguration {
        let file = configurationPath(for: name)
        let bytes = try read(file)
        do {
            return try BundleConfiguration(parsing: bytes)
        } catch {
            throw .invalid(path: file, error)
        }
    }

    private func read(_ file: String) throws(LoadError) -> [UInt8] {
        // O_NONBLOCK: opening a FIFO planted under the name must not hang the automounter.
        let fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .notConfigured(path: file) }
            if code == ELOOP { throw .unreadable(path: file, reason: "is a symbolic link (refused)") }
            throw .unreadable(path: file, reason: String(cString: strerror(code)))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw .unreadable(path: file, reason: "is not a regular file")
        }
        if geteuid() == 0, info.st_uid != 0 || info.st_mode & 0o022 != 0 {
            throw .unreadable(path: file, reason: "must be owned by root and writable by nobody else")
        }
        let limit = BundleConfiguration.maximumFileSize
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        var count = 0
        while count <= limit {
            let got = bytes.withUnsafeMutableBytes { buffer in
                Glibc.read(fd, buffer.baseAddress! + count, limit + 1 - count)
            }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw .unreadable(path: file, reason: String(cString: strerror(errno))) }
            if got == 0 { break }
            count += got
        }
        return Array(bytes.prefix(count))
    }
}
