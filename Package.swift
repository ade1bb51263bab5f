// swift-tools-version: 6.1
// ODRFS — On-Demand Resources for Linux as a FUSE filesystem.
// The target list mirrors the architecture in DESIGN.md: each layer knows only the one below.
import PackageDescription

// The commit `odrfs --version` names: mount-scripts/package.sh sets ODRFS_BUILD_COMMIT (the
// environment is part of SwiftPM's manifest cache key); a plain `swift build` says "unknown".
// Only hex digits and "-dirty" get through, so the value cannot break the C string it becomes.
let buildCommit: String = {
    let value = Context.environment["ODRFS_BUILD_COMMIT"] ?? ""
    let allowed = Set("0123456789abcdef-dirty")
    return !value.isEmpty && value.count <= 64 && value.allSatisfy(allowed.contains) ? value : "unknown"
}()

let package = Package(
    name: "odrfs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "odrfs", targets: ["odrfs"]),
        // The Swift client library: BundleResourceRequest for programs using a mount.
        .library(name: "ODRFSClient", targets: ["ODRFSClient"]),
        // For the fuzz package in Fuzz/ (a package of its own so that its sanitizer build never
        // touches this one): the parsers of manifests, indexes, control lines and tag specs.
        .library(name: "ODRFSCore", targets: ["ODRFSCore"]),
        .library(name: "ODRFSControl", targets: ["ODRFSControl"]),
        .library(name: "ODRFSBuild", targets: ["ODRFSBuild"]),
        .library(name: "ODRFSCompression", targets: ["ODRFSCompression"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // HTTP: the embedded origin (server), the HTTP origin (client), signals and graceful shutdown.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // Metrics: the mount instruments itself with swift-metrics; `--metrics` serves them
        // in Prometheus text format through swift-prometheus.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // The C boundary: libfuse3's low-level API plus shims for what Swift cannot call directly.
        .systemLibrary(
            name: "CFuse3",
            pkgConfig: "fuse3",
            providers: [.apt(["libfuse3-dev"])]
        ),
        // Debian's libzstd (libzstd-dev): compressed packs, one zstd frame per chunk.
        .systemLibrary(
            name: "CZstd",
            pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"])]
        ),
        // One Swift type over libzstd's frame API (ZstdFrame): the only importer of CZstd.
        .target(name: "ODRFSCompression", dependencies: ["CZstd"]),
        // FUSE passthrough for libfuse 3.14: /dev/fuse I/O hooks that patch the INIT and OPEN replies.
        .target(name: "CFusePassthrough", dependencies: ["CFuse3"]),
        // Debian's liburing (liburing-dev), for FUSE over io_uring.
        .systemLibrary(
            name: "CLibURing",
            pkgConfig: "liburing",
            providers: [.apt(["liburing-dev"])]
        ),
        // FUSE over io_uring under libfuse 3.14: ring entries in, libfuse's dispatcher, replies back.
        .target(name: "CFuseRing", dependencies: ["CFuse3", "CFusePassthrough", "CLibURing"]),
        // Typed Swift over libfuse: the only importer of CFuse3.
        .target(
            name: "FUSEKit",
            dependencies: [
                "CFuse3",
                "CFusePassthrough",
                "CFuseRing",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The daemon's threads for blocking calls (NIOThreadPool), and deadlines for calls that may hang.
        .target(
            name: "ODRFSRuntime",
            dependencies: [
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // Concepts and formats: tags, packs, the manifest, the file index, the pack container. No policy.
        .target(
            name: "ODRFSCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // `odrfs build`: tag spec → pack plan → dist dir.
        .target(
            name: "ODRFSBuild",
            dependencies: [
                "ODRFSCore",
                "ODRFSCompression",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The local pack cache: verified pack files, atomic publication, the SQLite index, eviction policy.
        // It is the acquisition pipeline's sink (ODRFSFetch's DownloadSink); the fetcher knows nothing of it.
        .target(
            name: "ODRFSStore",
            dependencies: [
                "CGlibcExtras",
                "ODRFSCore",
                "ODRFSFetch",
                "ODRFSRuntime",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Origins (file and http(s)), one retry policy, and the acquisition pipeline writing
        // verified bytes into a sink (DownloadSink) that it knows nothing else of.
        .target(
            name: "ODRFSFetch",
            dependencies: [
                "ODRFSCore",
                "ODRFSCompression",
                "ODRFSRuntime",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // NIOConnectionError: telling "nobody there" from "the connection broke".
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // HTTP/2 flow-control windows for the origin client (HTTP2Windows.swift).
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ]
        ),
        // `odrfs serve`: the embedded origin, a dist dir over HTTP with Range, ETag and a bearer token.
        .target(
            name: "ODRFSServer",
            dependencies: [
                "ODRFSCore",
                .product(name: "Hummingbird", package: "hummingbird"),
                // HTTP1Channel's idle timeout and the connection cap (MaximumAvailableConnections).
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The filesystem: resource manager, inode mapping, the FUSE operations and the daemon wiring.
        .target(
            name: "ODRFSMount",
            dependencies: [
                "CGlibcExtras",
                "FUSEKit",
                "ODRFSRuntime",
                "ODRFSCore",
                "ODRFSStore",
                "ODRFSFetch",
                "ODRFSControl",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // `--metrics ADDR:PORT`: the swift-metrics backend (swift-prometheus) and its HTTP endpoint.
        .target(
            name: "ODRFSMetrics",
            dependencies: [
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The commit the binary was built from, for `odrfs --version` (a C string define).
        .target(name: "CBuildInfo", cSettings: [.define("ODRFS_BUILD_COMMIT", to: "\"\(buildCommit)\"")]),
        // `odrfs mount` forks its daemon before main, while the process has one thread.
        .target(name: "CEarlyFork"),
        // glibc's malloc_trim, for the mount once it is ready.
        .target(name: "CGlibcExtras"),
        // The `odrfs` command line: one ParsableCommand per file.
        .executableTarget(
            name: "odrfs",
            dependencies: [
                "CBuildInfo",
                "CEarlyFork",
                "ODRFSCore",
                "ODRFSBuild",
                "ODRFSStore",
                "ODRFSFetch",
                "ODRFSMount",
                "ODRFSServer",
                "ODRFSControl",
                "ODRFSMetrics",
                "ODRFSRuntime",
                // InsightOptions names the registry type it hands to the endpoint.
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Shared by the test targets: child processes reaped by PID, never by SIGCHLD; logs captured in memory.
        .target(name: "TestSupport", dependencies: ["ODRFSCore", .product(name: "Logging", package: "swift-log")], path: "Tests/TestSupport"),
        .testTarget(name: "FUSEKitTests", dependencies: ["FUSEKit", "TestSupport", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "ODRFSCoreTests", dependencies: ["ODRFSCore", "TestSupport", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "ODRFSRuntimeTests", dependencies: ["ODRFSRuntime", "TestSupport"]),
        .testTarget(name: "ODRFSCompressionTests", dependencies: ["ODRFSCompression"]),
        .testTarget(name: "ODRFSMetricsTests", dependencies: [
            "ODRFSMetrics", "TestSupport",
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "ODRFSBuildTests", dependencies: ["ODRFSBuild", "ODRFSCore", "ODRFSCompression", "TestSupport"]),
        // Tests only: an SQLite VFS that keeps each file as of its last fsync, a simulated power cut.
        .target(name: "CPowerCutVFS", path: "Tests/CPowerCutVFS", linkerSettings: [.linkedLibrary("sqlite3")]),
        .testTarget(name: "ODRFSStoreTests", dependencies: [
            "ODRFSStore", "ODRFSCore", "TestSupport", "CPowerCutVFS",
            // Damaging the cache index's rows directly, as a corrupt file would.
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .testTarget(name: "ODRFSServerTests", dependencies: [
            "ODRFSServer", "TestSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // HTTPOrigin against a fault-injecting test origin (SwiftNIO) whose behaviour per request is scripted.
        // A scriptable HTTP origin (SwiftNIO) that lies, stalls, truncates and resets on cue.
        .target(name: "FaultOriginSupport", dependencies: [
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ], path: "Tests/FaultOriginSupport"),
        .testTarget(name: "ODRFSFetchTests", dependencies: [
            "ODRFSFetch", "ODRFSCore", "ODRFSCompression", "ODRFSStore", "ODRFSServer", "TestSupport", "FaultOriginSupport",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "ODRFSMountTests", dependencies: [
            "ODRFSMount", "ODRFSCore", "ODRFSStore", "ODRFSFetch", "ODRFSBuild", "ODRFSRuntime", "CFuse3", "TestSupport",
            "ODRFSCompression", "ODRFSMetrics",
            "FaultOriginSupport",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Real mounts driven through the built `odrfs` binary and real tools.
        .testTarget(name: "MountTests", dependencies: [
            "ODRFSCore", "ODRFSMount", "ODRFSStore", "ODRFSBuild", "FUSEKit", "ODRFSControl", "ODRFSClient", "CFuse3", "TestSupport",
            "FaultOriginSupport", .product(name: "Logging", package: "swift-log"),
        ]),
        // The control plane: the socket protocol, its server (driven by a ControlService) and client.
        .target(
            name: "ODRFSControl",
            dependencies: [
                "ODRFSCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // BundleResourceRequest: NSBundleResourceRequest for Swift programs on Linux.
        .target(name: "ODRFSClient", dependencies: ["ODRFSControl"]),
        // The iTravel-style example program using ODRFSClient.
        .executableTarget(name: "odrfs-itravel", dependencies: ["ODRFSClient"], path: "Examples/itravel-client"),
        // A fake ControlService shared by the control and client tests.
        .target(name: "ControlTestSupport", dependencies: ["ODRFSControl", "TestSupport"], path: "Tests/ControlTestSupport"),
        .testTarget(name: "ODRFSControlTests", dependencies: [
            "ODRFSControl", "ControlTestSupport", "TestSupport",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .testTarget(name: "ODRFSClientTests", dependencies: ["ODRFSClient", "ODRFSControl", "ControlTestSupport", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
