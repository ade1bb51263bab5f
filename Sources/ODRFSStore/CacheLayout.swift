import Foundation
import Crypto
import ODRFSCore

/// Where things live inside a cache directory.
///
/// ```
/// <root>/lock            held (flock) by the one mount using this cache
/// <root>/index.sqlite    the cache index (SQLite, WAL): packs, access times, priorities
/// <root>/manifest.json   the manifest of the bundle version last mounted
/// <root>/manifest.json.sig its signature, when it had one (offline mounts with --trust-key check it)
/// <root>/index/<sha>.odrx  verified file indexes: the mounted revision's, the one an update
///                        replaced, one an update check fetched; pinned, but counted in the
///                        budget (``CacheMetadata``); older ones deleted at an update or mount
/// <root>/packs/<sha>.tar   verified packs, named by content like on the origin
/// <root>/files/<sha>.<offset> passthrough backing files: one large file's bytes copied
///                        out of the local pack <sha> (it starts at <offset> there);
///                        derived, so emptied at startup
/// <root>/unverified/<sha>.tar packs of this bundle that the index no longer vouched for at
///                        startup (a lost or damaged index, a touched file): hashed in the
///                        background and moved to packs/ only if right
/// <root>/tmp/            downloads in progress; emptied at startup
/// <root>/trash/          evicted packs waiting to be unlinked off the lock; emptied at startup
/// <root>/odrfs.log       the daemon's log
/// ```
/// Names are content addresses, so a file under `packs/` is either a complete,
/// verified pack or absent: downloads are renamed into place only after verification.
public struct CacheLayout: Sendable {
    public let root: String

    public init(root: String) {
        self.root = root
    }

    public var packsDirectory: String { root + "/packs" }
    public var indexDirectory: String { root + "/index" }
    public var temporaryDirectory: String { root + "/tmp" }
    public var unverifiedDirectory: String { root + "/unverified" }
    public var backingFilesDirectory: String { root + "/files" }
    public var trashDirectory: String { root + "/trash" }
    public var lockFile: String { root + "/lock" }
    public var indexFile: String { root + "/index.sqlite" }
    public var manifestFile: String { root + "/" + Manifest.fileName }
    public var manifestSignatureFile: String { root + "/" + ManifestSignature.fileName }
    public var logFile: String { root + "/odrfs.log" }

    /// The cached copy of `pack`, named by its content hash.
    public func path(of pack: PackDescriptor) -> String {
        packsDirectory + "/" + pack.sha256.hex + ".tar"
    }

    /// Where a cached copy of `pack` waits to be hashed again (see ``PackStore/reconcile(expected:chunkSize:now:deferringHashes:)``).
    public func unverifiedPath(of pack: PackDescriptor) -> String {
        unverifiedDirectory + "/" + pack.sha256.hex + ".tar"
    }

    /// The passthrough backing file of the file whose bytes start at `offset` in the
    /// pack with content hash `sha256`: content-addressed by pack and position.
    public func backingFilePath(sha256: String, offset: Int64) -> String {
        backingFilesDirectory + "/" + sha256 + "." + String(offset)
    }

    /// The cached copy of the file index.
    public func path(of index: IndexReference) -> String {
        indexDirectory + "/" + index.sha256.hex + "." + FileIndex.fileExtension
    }

    /// The default cache directory for an origin: one directory per origin, so two
    /// bundles never share packs by accident.
    public static func defaultRoot(forOrigin origin: String) -> String {
        let digest = SHA256.hash(data: Array(origin.utf8)).map { String(format: "%02x", $0) }.joined().prefix(16)
        let environment = ProcessInfo.processInfo.environment
        if geteuid() == 0 {
            return "/var/cache/odrfs/\(digest)"
        }
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return "\(xdg)/odrfs/\(digest)"
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return "\(home)/.cache/odrfs/\(digest)"
    }
}
