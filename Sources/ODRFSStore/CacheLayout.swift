import Foundation
import Crypto
import ODRFSCore

/// Where things live inside a cache directory (a private `--cache`) or a machine-wide
/// store (`--store`, the default). Three roots, which are one directory for a private cache:
///
/// ```
/// objects (root)          shared by every mount of a store
///   lock                  flock: LOCK_EX by a private cache's one mount, LOCK_SH by each mount of a store
///   index.sqlite          the objects' rows (SQLite, WAL): verified packs, access times
///   packs/<sha>.tar       verified packs, named by content like on the origin
///   trash/                evicted packs waiting to be unlinked off the lock
///   mounts/<id>/          a store's mount: its lock (LOCK_EX while it lives), references, work
///   files/<sha>           a store's passthrough copies, named by the SHA-256 of the file's bytes
///   indexes/<sha>.odrx    a store's verified file indexes, each stored once for every bundle
///   manifests/<sha>.json  a store's manifests, each stored once for every bundle
/// bundle (bundleRoot)     a store: bundles/<key>/, one per origin; a private cache: the root
///   index.sqlite          the bundle's own memory: priority overrides, trusted revisions, traces
///                         (a private cache: the same file as the objects' rows)
///   manifest.json(.sig)   the manifest of the bundle version last mounted, its signature
///                         (in a store, manifest.json is a hard link to its manifests/ object)
///   index/<sha>.odrx      verified file indexes: pinned, counted in the budget (in a store,
///                         hard links to indexes/ objects: an object no bundle links is garbage)
///   unverified/<sha>.tar  this bundle's packs waiting to be hashed again
///   odrfs.log             the daemon's log
/// work (workRoot)         a store: mounts/<id>/; a private cache: the root
///   tmp/                  downloads in progress
///   files/<sha>.<offset>  passthrough backing files: derived, only this mount accounts for them
/// ```
/// Names are content addresses, so a file under `packs/` is either a complete,
/// verified pack or absent: downloads are renamed into place only after verification.
public struct CacheLayout: Sendable {
    /// The objects' directory: the cache directory, or the store.
    public let root: String
    /// The bundle's own directory (the root, for a private cache).
    public let bundleRoot: String
    /// This mount's working directory (the root, for a private cache).
    public let workRoot: String

    /// A private cache: one directory for everything.
    public init(root: String) {
        self.root = root
        bundleRoot = root
        workRoot = root
    }

    /// The bundle `bundle` (``bundleKey(forOrigin:)``) of the store at `root`, for the
    /// mount `mount` (``StoreMountID``).
    public init(store root: String, bundle: String, mount: String) {
        self.root = root
        bundleRoot = root + "/bundles/" + bundle
        workRoot = root + "/mounts/" + mount
    }

    /// Whether this is a store's layout (bundles and mounts in their own directories).
    public var isStore: Bool { bundleRoot != root }

    public var packsDirectory: String { root + "/packs" }
    public var trashDirectory: String { root + "/trash" }
    public var lockFile: String { root + "/lock" }
    public var indexFile: String { root + "/index.sqlite" }
    /// A store's mounts, each a directory named by its ``StoreMountID``.
    public var mountsDirectory: String { root + "/mounts" }
    /// A store's passthrough copies of files, each named by the SHA-256 of its bytes, shared
    /// by every bundle and kept across mounts.
    public var sharedFilesDirectory: String { root + "/files" }

    /// The store's passthrough copy of the file whose bytes have this SHA-256 (hex).
    public func sharedFilePath(sha256: String) -> String {
        sharedFilesDirectory + "/" + sha256
    }

    /// A store's file indexes, each stored once (bundles hold hard links to them).
    public var sharedIndexesDirectory: String { root + "/indexes" }
    /// A store's manifests, each stored once (a bundle's `manifest.json` is a hard link).
    public var sharedManifestsDirectory: String { root + "/manifests" }

    /// The store's object for the file index with this SHA-256 (hex).
    public func sharedIndexPath(sha256: String) -> String {
        sharedIndexesDirectory + "/" + sha256 + "." + FileIndex.fileExtension
    }

    /// The store's object for the manifest whose bytes have this SHA-256 (hex).
    public func sharedManifestPath(sha256: String) -> String {
        sharedManifestsDirectory + "/" + sha256 + ".json"
    }

    public var indexDirectory: String { bundleRoot + "/index" }
    public var unverifiedDirectory: String { bundleRoot + "/unverified" }
    public var bundleIndexFile: String { bundleRoot + "/index.sqlite" }
    public var manifestFile: String { bundleRoot + "/" + Manifest.fileName }
    public var manifestSignatureFile: String { bundleRoot + "/" + ManifestSignature.fileName }
    public var logFile: String { bundleRoot + "/odrfs.log" }

    public var temporaryDirectory: String { workRoot + "/tmp" }
    public var backingFilesDirectory: String { workRoot + "/files" }
    /// A store mount's liveness lock (held LOCK_EX for the mount's life).
    public var mountLockFile: String { workRoot + "/lock" }
    /// The content hashes (hex, one a line) of the packs this store mount's revision names.
    public var referencesFile: String { workRoot + "/references" }

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

    /// The name of an origin's directory, in a store (`bundles/<key>`) and in the layout of
    /// releases before the store (`<store>/<key>`, a private cache per origin): the first 16
    /// hex digits of the SHA-256 of the origin argument.
    public static func bundleKey(forOrigin origin: String) -> String {
        String(SHA256.hash(data: Array(origin.utf8)).map { String(format: "%02x", $0) }.joined().prefix(16))
    }

    /// The machine-wide store of the user running this: `/var/cache/odrfs` for root, else
    /// `$XDG_CACHE_HOME/odrfs` or `~/.cache/odrfs`.
    public static func defaultStoreRoot() -> String {
        let environment = ProcessInfo.processInfo.environment
        if geteuid() == 0 { return "/var/cache/odrfs" }
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return "\(xdg)/odrfs" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return "\(home)/.cache/odrfs"
    }

    /// The per-origin cache directory releases before the store used by default (and that
    /// the store takes in: ``PackStore/adoptLegacyCache(at:)``).
    public static func defaultRoot(forOrigin origin: String) -> String {
        defaultStoreRoot() + "/" + bundleKey(forOrigin: origin)
    }
}
