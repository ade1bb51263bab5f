import Foundation
import ArgumentParser
import Foundation
import Logging
import ODRFSBuild
import ODRFSCore

/// `odrfs build`: splits a resource directory into tagged packs and writes a dist dir that any
/// static host can serve.
struct BuildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Plan packs from a tag spec and write a dist dir.",
        discussion: """
            Files are grouped by their exact set of tags (from odr.yaml at the resource root, or \
            --spec); untagged files form the base pack. The same input always gives a \
            byte-identical dist dir. An existing output directory is used only if it is \
            empty or a previous dist dir: the new revision is published next to the old ones \
            (packs and indexes are content-addressed and stay; manifest.json is replaced \
            atomically, last) and its revision is one more than the previous one's (1 for a \
            fresh dist dir). --keep N keeps the objects of the last N revisions (recorded in \
            manifests/<revision>.json) and removes the others. With --sign-key, manifest.json.sig \
            (the Ed25519 signature of the exact manifest bytes) is published with the manifest. \
            --expires stores build time + DURATION in the manifest; mounts with --trust-key \
            refuse it afterwards. Packs are compressed with zstd by default, one frame per \
            chunk (packs/<sha256>.tar.zst, <sha256> being the uncompressed tar's hash); \
            --compress none writes plain tar packs. --chunk-size (default 1M) sets the unit the \
            manifest hashes: smaller chunks make updates of compressed packs fetch closer to what \
            changed (a frame per chunk) at the cost of a longer manifest and a little compression.

            --prefetch-from TRACE.json (repeatable) reads traces written by `odrfs trace` and puts \
            the tags in the order the recorded sessions first needed them at the head of the \
            manifest's prefetch list, ahead of the spec's own prefetch tags; several traces merge \
            by first-need rank. Packs only prefetched in a trace are not counted as needed.
            """)

    @Argument(help: "The resource directory to bundle.")
    var resourceDir: String

    @Option(name: [.short, .customLong("output")], help: "The dist dir to write.")
    var output: String

    @Option(help: "The tag spec (default: odr.yaml in the resource directory).")
    var spec: String?

    @Option(name: .customLong("sign-key"), help: "Sign the manifest with this private key (made by `odrfs keygen`).")
    var signKey: String?

    @Option(help: "How packs are stored: zstd[:LEVEL] (one zstd frame per chunk, packs/<sha256>.tar.zst; default zstd:3) or none (plain tar).")
    var compress: CompressionSettingArgument = CompressionSettingArgument(value: .default)

    @Option(help: "The manifest expires this long after the build: a number and s, m, h or d (e.g. 30d).")
    var expires: ExpiryDurationArgument?

    @Option(help: "Keep the packs and indexes of the last N revisions (the new one included); remove the rest.")
    var keep: Int = BundleBuilder.defaultKeep

    @Option(name: .customLong("bundle-id"), help: ArgumentHelp(
        "The bundle's identity, as a bundle identifier (com.example.Game); default: the tag spec's bundle:, else the dist dir's, else the resource directory's name.",
        valueName: "id"))
    var bundleID: String?

    @Option(name: .customLong("chunk-size"), help: ArgumentHelp(
        "The unit of verification, of compressed frames and of what an update of a compressed pack fetches (16K to 64M; default 1M).",
        valueName: "size"))
    var chunkSize: ByteCountArgument?

    /// Sizes `--chunk-size` accepts: below 16 KiB the chunk list outgrows its use, above
    /// 64 MiB a chunk (held whole while it is compressed or verified) costs too much memory.
    static let chunkSizes = ByteCount.kibibytes(16)...ByteCount.mebibytes(64)

    func validate() throws {
        guard keep >= 1 else { throw ValidationError("--keep must be at least 1 (the new revision)") }
        if let chunkSize, !Self.chunkSizes.contains(chunkSize.value) {
            throw ValidationError("--chunk-size \(chunkSize.text) is outside 16K…64M")
        }
    }
    @Option(name: .customLong("prefetch-from"), help: ArgumentHelp("Order the prefetch list by this access trace (from `odrfs trace`); repeatable.", valueName: "trace.json"))
    var prefetchFrom: [String] = []

    func run() throws {
        var logger = Logger(label: "odrfs.build")
        // Warnings reach the user through the report below; the logger is for debugging.
        logger.logLevel = .error
        var builder = BundleBuilder(resourceRoot: resourceDir, specPath: spec, logger: logger)
        builder.compression = compress.value
        builder.keep = keep
        if let bundleID {
            guard let identity = BundleIdentity(bundleID) else {
                throw ValidationError("--bundle-id \(bundleID): \(BundleIdentity.problem(with: bundleID) ?? "invalid")")
            }
            builder.bundleIdentity = identity
        }
        if let chunkSize { builder.chunkSize = chunkSize.value }
        if let signKey {
            builder.signingKey = try loadSigningKey(signKey)
        }
        if let expires {
            guard let time = expires.value.expiry(after: Date()) else {
                throw ValidationError("--expires \(expires.value) ends after 9999-12-31; choose a shorter duration")
            }
            builder.expires = time
        }
        if !prefetchFrom.isEmpty {
            builder.learnedPrefetch = AccessTrace.prefetchOrder(try prefetchFrom.map(loadTrace))
        }
        do {
            let report = try builder.build(into: output)
            print(report.table(), terminator: "")
            for warning in report.warnings {
                printToStandardError("warning: \(warning)")
            }
        } catch {
            printToStandardError("error: \(error)")
            throw ExitCode.failure
        }
    }

    /// Reads one trace: a regular file no larger than the parser accepts, then parsed.
    private func loadTrace(_ path: String) throws -> [TraceEntry] {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ValidationError("--prefetch-from \(path): not a readable regular file")
        }
        guard info.st_size <= AccessTrace.maximumBytes, let contents = FileManager.default.contents(atPath: path) else {
            throw ValidationError("--prefetch-from \(path): larger than \(AccessTrace.maximumBytes) bytes or unreadable")
        }
        do {
            return try AccessTrace.parse(contents)
        } catch {
            throw ValidationError("--prefetch-from \(path): \(error)")
        }
    }

    private func loadSigningKey(_ path: String) throws -> SigningKey {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_size <= 4096,
              let contents = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read the signing key \(path)")
        }
        do {
            return try SigningKey(fileContents: contents)
        } catch {
            throw ValidationError("\(path): \(error)")
        }
    }

    private func printToStandardError(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// `--expires 30d`: see ``ExpiryDuration``.
struct ExpiryDurationArgument: ExpressibleByArgument, Sendable {
    let value: ExpiryDuration

    init?(argument: String) {
        guard let value = ExpiryDuration(parsing: argument) else { return nil }
        self.value = value
    }
}

/// `--compress zstd:19`: see ``CompressionSetting``.
struct CompressionSettingArgument: ExpressibleByArgument, Sendable {
    let value: CompressionSetting

    init(value: CompressionSetting) {
        self.value = value
    }

    init?(argument: String) {
        guard let value = CompressionSetting(parsing: argument) else { return nil }
        self.value = value
    }

    var defaultValueDescription: String { value.description }
}
