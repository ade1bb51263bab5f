import ArgumentParser
import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSMount
import ODRFSRuntime
import ODRFSStore

/// `odrfs mount <origin> <mountpoint>`: returns once the mount is ready.
struct MountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount a bundle; files are fetched from the origin when first opened.",
        discussion: """
            The origin is a dist dir made by `odrfs build`: an http(s):// URL (nginx, a CDN, \
            `odrfs serve`), a local path or a file:// URL.

            The command returns when the base and initial-install packs are local and the \
            mount is usable; the daemon then runs in the background (logs in the cache \
            directory's odrfs.log) until `odrfs unmount`. Exit status 1 means the mount failed; \
            the message says why.
            """
    )

    @Argument(help: "The dist dir: http(s):// URL, path or file:// URL.")
    var origin: String

    @Argument(help: "An empty directory to mount on.")
    var mountpoint: String

    @Option(name: .long, help: "A private cache directory for this mount alone, instead of the store.")
    var cache: String?

    @Option(name: .long, help: "The store every mount of this user shares (default: ~/.cache/odrfs, or /var/cache/odrfs for root).")
    var store: String?

    @Option(name: .long, help: "Cache budget (e.g. 500M, 2G), counting packs, their passthrough copies and the file indexes and manifest the mount keeps: above it, unused packs are purged (lowest preservation priority, then least recently used) down to 75 %.")
    var cacheSize: ByteCountArgument?

    @Option(name: .long, help: "Keep at least this much free on the cache's filesystem (e.g. 1G); purges down to 125 % of it.")
    var minFree: ByteCountArgument?

    @Option(name: .long, help: "Most bytes of packs in use at once before explicit tag requests fail (default 2G, as in ODR).")
    var maxInUse: ByteCountArgument?

    @Option(name: .long, help: "A file whose first line is a bearer token for the origin (never pass the token itself on the command line).")
    var tokenFile: String?

    @Option(name: .long, help: "A PEM file of CA certificates to trust for an https:// origin, besides the system store.")
    var caFile: String?

    @Option(name: .long, help: "Seconds a fetch may go without progress before the waiting open() or read() fails with EIO.")
    var fetchTimeout: Double = 30

    @Option(name: .long, help: "A transfer slower than this many bytes per second (e.g. 1K, 10K; 0 turns it off) counts as no progress toward --fetch-timeout, across retries, as curl's --speed-limit and CernVM-FS's CVMFS_LOW_SPEED_LIMIT do (default 1K).")
    var lowSpeedLimit: ByteCountArgument?

    @Option(name: .customLong("trust-key"), help: "A public key file (KEYFILE.pub from `odrfs keygen`); the manifest must be signed by one of the keys given (repeat for key rotation), unexpired and not older than a revision already seen.")
    var trustKeys: [String] = []

    @Option(name: .long, help: "Packs downloading at once.")
    var maxDownloads: Int = 8

    @Option(name: .long, help: "Another http(s) server of the same dist dir (repeatable); append ,token-file=F for its own bearer token (--token-file is for the main origin only).")
    var mirror: [String] = []

    @Option(name: .long, help: "An HTTP proxy (http://[user:pass@]host:port) for the origin and mirrors; default: HTTPS_PROXY / HTTP_PROXY, except hosts in NO_PROXY.")
    var proxy: String?

    @Option(name: .long, help: "Cap on prefetch and background download bandwidth together, in bytes per second (e.g. 2M, 500K); opens and requests are never capped.")
    var maxBackgroundRate: ByteCountArgument?

    @Option(name: .long, help: "Hold prefetch until no open has waited for this long after the mount is ready (e.g. 500ms, 5s, 1m); initial-install tags are never delayed.")
    var prefetchDelay: DurationArgument?

    @Option(name: .long, help: "FUSE passthrough: auto (large files of local packs are read by the kernel from their own copies when it and the daemon's privileges allow) or off (every read goes through the daemon).")
    var passthrough: PassthroughSettings.Mode = .auto

    @Option(name: .long, help: "The smallest file that passes through (e.g. 256K, 4M; default 1M).")
    var passthroughMinSize: ByteCountArgument?

    @Option(name: .long, help: "KEY=VALUE[,VALUE...]: serve this variant of the bundle's variant key KEY (texture format, language, device tier), the values in order of preference (repeatable, one per key). Without it, locale follows LC_ALL, LC_MESSAGES and LANG, keys with rules follow the machine's memory and CPUs, other keys take their default.")
    var variant: [String] = []

    @Flag(name: .long, help: "Never contact the origin: mount the cached bundle version; opens of packs not cached fail at once with EIO.")
    var offline = false

    @Flag(name: .long, help: "Stay in the foreground and log to stderr.")
    var foreground = false

    @Option(name: .customShort("o"), help: "Extra FUSE mount options, comma separated (e.g. allow_other).")
    var fuseOptions: [String] = []

    @Option(name: .long, help: .hidden)
    var readyFd: Int32?

    /// Set by the parent `odrfs mount` for its daemon: the whole configuration, as JSON.
    @Option(name: .long, help: .hidden)
    var configurationFd: Int32?

    @OptionGroup var logging: LoggingOptions

    @OptionGroup var updates: UpdateOptions

    @OptionGroup var insight: InsightOptions

    @OptionGroup var transport: TransportOptions

    func validate() throws {
        guard fetchTimeout > 0 else { throw ValidationError("--fetch-timeout must be positive") }
        guard maxDownloads > 0 else { throw ValidationError("--max-downloads must be at least 1") }
        if let maxBackgroundRate, maxBackgroundRate.value.value < 1024 {
            throw ValidationError("--max-background-rate must be at least 1K (bytes per second)")
        }
        if let passthroughMinSize, passthroughMinSize.value.value < 1 {
            throw ValidationError("--passthrough-min-size must be at least 1 byte")
        }
        if let tokenFile, access(tokenFile, R_OK) != 0 {
            throw ValidationError("cannot read the token file \(tokenFile): \(String(cString: strerror(errno)))")
        }
        for option in try parsedMirrors() {
            if let tokenFile = option.tokenFile, access(tokenFile, R_OK) != 0 {
                throw ValidationError("cannot read the token file \(tokenFile) of a --mirror: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The `--mirror` options, parsed; token files made absolute for the daemon.
    func parsedMirrors() throws -> [MirrorOption] {
        guard mirror.count <= MirrorSet.maximumMembers - 1 else {
            throw ValidationError("at most \(MirrorSet.maximumMembers - 1) --mirror options")
        }
        return try mirror.map { argument in
            do throws(FetchError) {
                var option = try MirrorOption(parsing: argument)
                option.tokenFile = option.tokenFile.map(Self.absolute)
                return option
            } catch {
                throw ValidationError(error.message)
            }
        }
    }

    /// Reads a `--trust-key` file here, so that a wrong path or format fails at once and
    /// the daemon gets the key itself.
    static func loadTrustKey(_ path: String) throws -> TrustKey {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= 4096,
              let contents = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read the trust key \(path)")
        }
        do {
            return try TrustKey(fileContents: contents)
        } catch {
            throw ValidationError("--trust-key \(path): \(error)")
        }
    }

    /// Creates `path` mode 0700, or makes an existing one so, through a descriptor opened
    /// without following a symlink: a cache path a user could swap for a link must not make
    /// root chmod something else. Refuses a directory not owned by this user or writable by
    /// others (they could have planted entries in it).
    static func makePrivate(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno == ENOENT {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            _ = mkdir(path, 0o700)
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            throw ValidationError("cannot open the cache directory \(path) (a symbolic link is refused): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o022 == 0 else {
            throw ValidationError("the cache directory \(path) must be owned by uid \(geteuid()) and writable by nobody else for a mount every user may read")
        }
        guard fchmod(fd, 0o700) == 0 else {
            throw ValidationError("cannot make the cache \(path) private: \(String(cString: strerror(errno)))")
        }
    }

    /// The daemon runs from another working directory: hand it absolute paths.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    func run() async throws {
        var configuration = MountConfiguration(origin: origin, mountpoint: mountpoint, cacheDirectory: cache)
        configuration.fuseOptions = fuseOptions.flatMap { $0.split(separator: ",").map(String.init) }
        configuration.storeDirectory = store.map(Self.absolute)
        configuration.cacheDirectory = cache.map(Self.absolute)
        configuration = configuration.resolved
        configuration.originOptions = OriginOptions(
            tokenFile: tokenFile.map(Self.absolute), caFile: caFile.map(Self.absolute),
            fetchDeadline: .milliseconds(Int64(fetchTimeout * 1000))
        )
        configuration.originOptions.proxy = ProxySettings.resolve(explicit: proxy)
        configuration.originOptions.lowSpeedLimit = lowSpeedLimit?.value ?? OriginOptions.defaultLowSpeedLimit
        configuration.maximumConcurrentDownloads = maxDownloads
        configuration.schedule = SchedulerSettings(maximumBackgroundRate: maxBackgroundRate?.value, prefetchDelay: prefetchDelay?.value)
        configuration.offline = offline
        configuration.passthrough = PassthroughSettings(
            mode: passthrough, minimumSize: passthroughMinSize?.value ?? PassthroughSettings.defaultMinimumSize
        )
        configuration.mirrors = try parsedMirrors()
        configuration.trustedKeys = try trustKeys.map(Self.loadTrustKey)
        configuration.updates = updates.settings
        do throws(VariantPreferences.Problem) {
            configuration.variants = try VariantPreferences(arguments: variant).wire
        } catch {
            throw ValidationError("--variant: \(error.reason)")
        }
        configuration.localeEnvironment = ProcessInfo.processInfo.environment.filter {
            VariantSelection.localeVariables.contains($0.key)
        }
        configuration.limits = CacheLimits(
            budget: cacheSize?.value, minimumFree: minFree?.value,
            maximumInUse: maxInUse?.value ?? CacheLimits.defaultMaximumInUse
        )
        insight.apply(to: &configuration)
        transport.apply(to: &configuration)
        if let configurationFd {
            configuration = try Daemonizer.readConfiguration(from: configurationFd)
        }
        if configuration.isSharedWithEveryUser {
            // Every local user reads the mount; its cache, log and runtime state stay root's.
            try Self.makePrivate(configuration.storage.root)
        }
        // Who waits for this mount to be ready: nobody (--foreground), the `odrfs mount` that
        // spawned this daemon (--ready-fd), or the parent of the early fork (see Daemonizer).
        var reportTo = readyFd
        if !foreground {
            guard let early = Daemonizer.earlyReadyDescriptor else {
                try Daemonizer.startDaemon(configuration: configuration, logLevel: logging.logLevel)
                return
            }
            reportTo = try Daemonizer.becomeDaemon(configuration, reportingTo: early)
        }
        let logger = logging.makeLogger(label: "odrfs.mount")
        let readiness = ReadinessReporter(descriptor: reportTo)
        // Before the daemon makes its metric handles.
        let metrics = InsightOptions.bootstrapMetrics(configuration)
        let daemon: MountDaemon
        do {
            daemon = try await MountDaemon.prepare(configuration, logger: logger) { done, total in
                readiness.progress(done: done, total: total)
            }
            // The FUSE mount, the pid file and the control socket's set-up are blocking
            // calls (mount(2) or fusermount3, writes, bind): on the I/O executor, never on
            // the cooperative pool.
            try await IOExecutor.cache.run { () throws(MountError) in try daemon.mount() }
        } catch {
            logger.error("mount failed", metadata: ["error": "\(error)"])
            readiness.fail("\(error)")
            throw ExitCode.failure
        }
        let endpoint = metrics.map { InsightOptions.serveMetrics($0, daemon: daemon, logger: logger) }
        defer { endpoint?.cancel() }
        let ready = await daemon.run { result in
            switch result {
            case .success:
                readiness.succeed()
                // A spawned daemon leaves the caller's process group (the automounter's,
                // under autofs) only now that its mount is ready: see Daemonizer.
                if readiness.descriptor != nil { _ = setsid() }
            case .failure(let error):
                logger.error("mount failed", metadata: ["error": "\(error)"])
                readiness.fail("\(error)")
            }
        }
        if !ready { throw ExitCode.failure }
    }
}

/// Tells the waiting `odrfs mount` parent whether the mount came up, over a pipe.
struct ReadinessReporter: Sendable {
    let descriptor: Int32?

    func succeed() { send("ready\n") }

    /// Initial-install progress, for the parent's progress bar.
    func progress(done: Int64, total: Int64) {
        guard let descriptor else { return }
        let line = "progress \(done) \(total)\n"
        _ = line.withCString { write(descriptor, $0, strlen($0)) }
    }

    func fail(_ message: String) {
        send("error: " + message.replacingOccurrences(of: "\n", with: " ") + "\n")
        if descriptor == nil {
            FileHandle.standardError.write(Data("odrfs mount: \(message)\n".utf8))
        }
    }

    private func send(_ line: String) {
        guard let descriptor else { return }
        _ = line.withCString { write(descriptor, $0, strlen($0)) }
        close(descriptor)
    }
}

/// A size on the command line: `512M`, `2G`, `1.5GiB`, `1048576`.
struct ByteCountArgument: ExpressibleByArgument, Sendable {
    let value: ByteCount
    let text: String

    init?(argument: String) {
        guard let value = ByteCount(parsing: argument), value.value >= 0 else { return nil }
        self.value = value
        self.text = argument
    }
}
