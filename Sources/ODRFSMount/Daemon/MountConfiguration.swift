import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSStore

/// Everything `odrfs mount` was asked to do: built once from the command line and handed
/// whole (as JSON, over a pipe) to the daemon it starts, never re-listed flag by flag.
public struct MountConfiguration: Sendable, Codable {
    /// A dist dir path or a file:// URL (HTTP(S) in a later version).
    public var origin: String
    public var mountpoint: String
    /// `--cache`: a private cache directory for this one mount; nil: the store.
    public var cacheDirectory: String?
    /// `--store`: the machine-wide store; nil: the user's default
    /// (`CacheLayout.defaultStoreRoot()`). Ignored when `cacheDirectory` is set.
    public var storeDirectory: String?
    /// Extra `-o` options for the kernel mount (e.g. `allow_other`).
    public var fuseOptions: [String]
    /// `--token-file`, `--ca-file` and `--fetch-timeout` for HTTP(S) origins.
    public var originOptions = OriginOptions()
    /// `--max-downloads`: packs downloading at once.
    public var maximumConcurrentDownloads = 8
    /// `--cache-size`, `--min-free` and `--max-in-use`.
    public var limits = CacheLimits()
    /// The largest manifest accepted from an origin; guards against a hostile origin.
    public var manifestLimit = Manifest.maximumBytes
    /// `--trust-key`: the public keys (their contents, not paths) of which one must have
    /// signed the manifest. Empty: the manifest is trusted as served (no signature check).
    public var trustedKeys: [TrustKey] = []
    /// `--offline`: never contact the origin; mount the cached bundle version, and fail
    /// opens of packs that are not cached at once with EIO.
    public var offline = false
    /// `--mirror URL[,token-file=F]`: other servers of the same dist dir.
    public var mirrors: [MirrorOption] = []
    /// `--max-background-rate` and `--prefetch-delay`.
    public var schedule = SchedulerSettings()
    /// `--update-interval` and `--update-policy`.
    public var updates = UpdateSettings()
    /// `--learn-prefetch`: prefetch in the order earlier sessions on this machine first
    /// needed packs, after initial-install and before the manifest's prefetch list.
    public var learnPrefetch = false
    /// `--passthrough` and `--passthrough-min-size`.
    public var passthrough = PassthroughSettings()
    /// `--metrics ADDR:PORT`: where to serve Prometheus metrics; nil for nowhere.
    public var metricsAddress: String?
    /// `--io-uring`: take FUSE requests through io_uring where the kernel offers it.
    public var ioUring = false
    /// `--variant KEY=V1,V2`: per key, the values in order of preference (checked by
    /// ``ODRFSCore/VariantPreferences`` at the command line and again in the daemon).
    public var variants: [String: [String]] = [:]
    /// The locale variables (`LC_ALL`, `LC_MESSAGES`, `LANG`) of whoever ran `odrfs mount`:
    /// the `locale` variant follows them, even in a daemon started with a clean environment.
    public var localeEnvironment: [String: String] = [:]

    public init(origin: String, mountpoint: String, cacheDirectory: String? = nil, fuseOptions: [String] = []) {
        self.origin = origin
        self.mountpoint = mountpoint
        self.cacheDirectory = cacheDirectory
        self.fuseOptions = fuseOptions
    }

    /// A mount made by root with `-o allow_other`: shared with every local user. The kernel
    /// then checks the files' modes (`default_permissions` is added), and the control
    /// socket lets every user read and request tags, while only root changes the mount
    /// (``ODRFSControl/ControlAccess``). A user's `allow_other` mount keeps a private socket.
    public var isSharedWithEveryUser: Bool {
        // The kernel records the real uid (libfuse's getuid()) as the mount's owner, which
        // clients go by: both must be root.
        getuid() == 0 && geteuid() == 0 && fuseOptions.contains("allow_other")
    }

    /// The FUSE options the session is given: `default_permissions` with `allow_other`, so
    /// that other users are held to each file's mode.
    public var effectiveFuseOptions: [String] {
        guard fuseOptions.contains("allow_other"), !fuseOptions.contains("default_permissions") else { return fuseOptions }
        return fuseOptions + ["default_permissions"]
    }

    /// Where a mount keeps its packs.
    public enum Storage: Sendable, Equatable {
        /// A private cache directory (`--cache`), used by one mount at a time.
        case cache(String)
        /// The bundle `bundle` (`CacheLayout.bundleKey(forOrigin:)`) of the machine-wide
        /// store at `root`, shared with every other mount of it.
        case store(root: String, bundle: String)

        /// The layout of the directories that outlive one mount: for a store, the bundle's
        /// (its log, manifest and indexes) with no mount directory.
        public var layout: CacheLayout {
            switch self {
            case .cache(let root): CacheLayout(root: root)
            case .store(let root, let bundle): CacheLayout(store: root, bundle: bundle, mount: "")
            }
        }

        /// The directory to check and make private for a mount shared with every user.
        public var root: String {
            switch self {
            case .cache(let root), .store(let root, _): root
            }
        }
    }

    /// Where this mount keeps its packs: `--cache`, else `--store` or the default store,
    /// in the directory of this origin. Local origins are resolved first, so `./dist` and
    /// `/abs/dist` are one bundle of the store.
    public var storage: Storage {
        if let cacheDirectory { return .cache(cacheDirectory) }
        return .store(root: storeDirectory ?? CacheLayout.defaultStoreRoot(), bundle: CacheLayout.bundleKey(forOrigin: originKey))
    }

    /// The origin argument, a local path resolved.
    private var originKey: String {
        var key = origin
        if key.lowercased().hasPrefix("file://"), let url = URL(string: key) { key = url.path }
        if !key.contains("://"), let resolved = realpath(key, nil) {
            key = String(cString: resolved)
            free(resolved)
        }
        return key
    }

    /// The configuration with the default store written in, so that a daemon started with
    /// another environment uses the store this command meant.
    public var resolved: MountConfiguration {
        var resolved = self
        if cacheDirectory == nil, storeDirectory == nil { resolved.storeDirectory = CacheLayout.defaultStoreRoot() }
        return resolved
    }

    /// Opens this mount's storage: the private cache, or a new mount of the store.
    /// Blocking (flock, SQLite, directory listings): on the I/O executor.
    public func openStore(logger: Logger) throws(StoreError) -> PackStore {
        switch storage {
        case .cache(let root): try PackStore(root: root, logger: logger)
        case .store(let root, let bundle): try PackStore(store: root, bundle: bundle, logger: logger)
        }
    }
}
