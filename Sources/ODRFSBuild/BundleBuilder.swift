#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import ODRFSCore

/// `odrfs build`: tag spec → pack plan → a new revision of the dist dir.
///
/// 1. Load the spec (`--spec`, else `odr.yaml` at the root, else no tags at all).
/// 2. Scan the resource root with lstat, sorted by name bytes.
/// 3. Plan packs by exact tag set and variant (``VariantLayout``, when the spec declares
///    variants); base first.
/// 4. Lock the dist dir (see ``OutputDirectory``) and write every pack
///    (`packs/<sha256>.tar`, or `packs/<sha256>.tar.zst` compressed by chunk, see
///    ``PackCompressor``; `<sha256>` is always the uncompressed tar's) and the file index (`index/<sha256>.odrx`) next to the objects
///    of earlier revisions: under temporary names, fsynced, renamed to their content
///    address. An object that a kept revision already has is not written again.
/// 5. Publish: record the manifest as `manifests/<revision>.json`, then replace
///    `manifest.json` (and, with ``signingKey``, `manifest.json.sig`) by rename — the one
///    switch point, last, so a build killed at any instant leaves a servable revision.
/// 6. Prune: keep the objects of the last ``keep`` revisions, remove the rest.
///
/// The manifest's `revision` is 1 for a fresh output and one more than the replaced
/// manifest's otherwise. Output is a pure function of the input tree, the spec and the
/// previous revisions: no build-machine time, user or order leaks in (Ed25519 signatures are
/// deterministic too), so the same input gives a byte-identical dist dir — except for
/// `expires`, which is the build time plus ``expires``. On an error the objects this build
/// added are removed and the published revision is left untouched.
public struct BundleBuilder: Sendable {
    /// Apple's advice for asset packs: warn above 512 MiB, 64 MiB recommended.
    public static let packSizeWarning = ByteCount.mebibytes(512)
    public static let recommendedPackSize = ByteCount.mebibytes(64)
    /// `--keep`'s default: the revisions whose objects a dist dir keeps.
    public static let defaultKeep = 3

    public let resourceRoot: String
    public let specPath: String?
    public let logger: Logger
    public var chunkSize: ByteCount = Manifest.defaultChunkSize
    /// Signs the manifest (`--sign-key`); nil builds an unsigned bundle.
    public var signingKey: SigningKey?
    /// The manifest's expiry time in Unix seconds (`--expires`, already added to the
    /// build time); nil for none.
    public var expires: Int64?
    /// How many revisions keep their objects (`--keep`, at least 1): the new one and the
    /// `keep - 1` before it; packs and indexes none of them names are removed.
    public var keep: Int = BundleBuilder.defaultKeep
    /// How packs are stored in the dist dir (`--compress`); zstd level 3 by default.
    public var compression: CompressionSetting = .default
    /// How the file index chunks large files: content-defined chunks (index version 4,
    /// the default), or fixed 64 KiB blocks as releases before it wrote (version 3, which
    /// those releases read; compressed packs then keep one frame per chunk). No flag sets
    /// it: it is there so tests can make the bundles older releases made.
    public var indexChunking: IndexChunking = .contentDefined(.standard)
    /// Tags in the order recorded traces first needed them (`--prefetch-from`); they lead
    /// the manifest's prefetch list, the spec's own prefetch tags follow.
    public var learnedPrefetch: [Tag] = []
    /// The bundle's identity (`--bundle-id`); nil takes the tag spec's `bundle:`, else the
    /// dist dir's previous manifest's, else one derived from the resource directory's name.
    public var bundleIdentity: BundleIdentity?

    public init(resourceRoot: String, specPath: String? = nil, logger: Logger) {
        self.resourceRoot = resourceRoot
        self.specPath = specPath
        self.logger = logger
    }

    /// The last component of `path` resolved (so "." names the directory it is).
    static func directoryName(of path: String) -> String {
        guard let resolved = realpath(path, nil) else { return String(path.split(separator: "/").last ?? "") }
        defer { free(resolved) }
        return String(String(cString: resolved).split(separator: "/").last ?? "")
    }

    public func build(into distDir: String) throws(BuildError) -> BuildReport {
        guard keep >= 1 else { throw BuildError(.io, path: nil, "--keep \(keep): at least the new revision must be kept (1 or more)") }
        let root = Self.trimmed(resourceRoot)
        let output = try OutputDirectory(path: Self.trimmed(distDir), resourceRoot: root)
        try output.checkReplaceable()
        _ = try output.nextRevision()   // fail early, before anything is written
        var warnings: [String] = []
        let (spec, specRelative) = try loadSpec(root: root, warnings: &warnings)
        let tree = try ResourceScanner(root: root, skippedPath: specRelative).scan()
        try tree.checkSymlinks(resourceRoot: root)
        let layout = spec.variants.isEmpty ? nil : try VariantLayout(tree: tree, declarations: spec.variants)
        let plan = PackPlan(tree: tree, spec: spec, layout: layout)
        warnings += plan.warnings

        let lock = try output.open()
        defer { lock.release() }
        var written = BundleWriter.Written()
        do throws(BuildError) {
            // Read again under the lock: another build may have published meanwhile.
            let previous = try output.currentRevision()
            let revision = try output.nextRevision()
            if let previous { output.recordCurrentManifest(revision: previous) }
            let identity = bundleIdentity ?? spec.bundle ?? output.currentBundleIdentity()
                ?? BundleIdentity(deriving: Self.directoryName(of: root))
            let writer = BundleWriter(output: output, resourceRoot: root, chunkSize: chunkSize, compression: compression,
                                      indexChunking: indexChunking, logger: logger)
            let bundle = try writer.write(tree: tree, plan: plan, spec: spec, identity: identity, learnedPrefetch: learnedPrefetch,
                                          revision: revision, expires: expires, written: &written, warnings: &warnings)
            let signature: ManifestSignature?
            if let signingKey {
                do { signature = try signingKey.sign(bundle.encoded) } catch { throw BuildError(.io, path: nil, "cannot sign the manifest: \(error)") }
            } else {
                signature = nil
            }
            try output.publish(manifest: Array(bundle.encoded), signature: signature, revision: revision)
            let pruning = output.prune(keeping: keep, current: revision)
            warnings += pruning.warnings
            for warning in warnings { logger.warning("build warning", metadata: ["warning": "\(warning)"]) }
            let manifest = bundle.manifest
            logger.info("bundle built", metadata: ["dist": "\(output.path)", "bundle.version": "\(manifest.bundleVersion)",
                                                   "packs": "\(bundle.rows.count)", "revision": "\(revision)"])
            var report = BuildReport(distDir: output.path, bundleVersion: manifest.bundleVersion, rows: bundle.rows,
                                     indexEntries: bundle.indexEntries, warnings: warnings, revision: manifest.revision,
                                     signer: signingKey?.publicKey.id, expires: manifest.expires)
            report.reusedPacks = written.reusedPacks
            report.keptRevisions = pruning.keptRevisions
            report.removedObjects = pruning.removedObjects
            report.removedBytes = pruning.removedBytes
            return report
        } catch {
            // Objects this build added are named by no manifest; a first build leaves nothing.
            output.removeTemporaries()
            for object in written.created { unlink(output.path + "/" + object) }
            if lock.created { POSIXFile.removeTree(output.path) }
            throw error
        }
    }

    private func loadSpec(root: String, warnings: inout [String]) throws(BuildError) -> (TagSpec, String?) {
        let path = specPath ?? root + "/" + TagSpec.defaultFileName
        if specPath == nil, access(path, F_OK) != 0 {
            warnings.append("no \(TagSpec.defaultFileName) in '\(root)': every file goes into the base pack")
            return (.empty, nil)
        }
        let spec: TagSpec
        do { spec = try TagSpec.load(from: path) } catch { throw BuildError(spec: error) }
        return (spec, Self.relativePath(of: path, under: root))
    }

    /// The tree with every file's pack and content offset filled in.
    static func place(_ node: FileIndexWriter.Node, path: String,
                              _ placements: [String: PackFileWriter.Placement]) -> FileIndexWriter.Node {
        var node = node
        switch node.kind {
        case .regularFile:
            let placement = placements[path]
            node.pack = placement?.pack
            node.dataOffset = placement?.dataOffset ?? 0
            node.sha256 = placement?.sha256
            node.chunks = placement?.chunks
            node.blockHashes = placement?.blockHashes
        case .directory:
            node.children = node.children.map { place($0, path: path.isEmpty ? $0.name : path + "/" + $0.name, placements) }
        case .symlink:
            break
        }
        return node
    }

    static func trimmed(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// `path` relative to `root` when it lies inside it (compared after resolving both).
    static func relativePath(of path: String, under root: String) -> String? {
        guard let real = realPath(path), let realRoot = realPath(root) else { return nil }
        let prefix = realRoot.hasSuffix("/") ? realRoot : realRoot + "/"
        return real.hasPrefix(prefix) ? String(real.dropFirst(prefix.count)) : nil
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
