#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import ODRFSCore

/// `odrfs build`: tag spec → pack plan → dist dir.
///
/// 1. Load the spec (`--spec`, else `odr.yaml` at the root, else no tags at all).
/// 2. Scan the resource root with lstat, sorted by name bytes.
/// 3. Plan packs by exact tag set; base first.
/// 4. Write every pack (`packs/<sha256>.tar`), the file index (`index/<sha256>.odrx`) and
///    `manifest.json` (and, with ``signingKey``, `manifest.json.sig`) into a temporary
///    sibling of the output, fsync them and their directories, then swap it into place
///    (see ``OutputDirectory/publish(_:)``): the signature is published in the same
///    atomic exchange as the manifest it signs, so no reader sees one without the other.
///
/// The manifest's `revision` is 1 for a fresh output and one more than the replaced
/// manifest's otherwise. Output is a pure function of the input tree, the spec and the
/// previous revision: no build-machine time, user or order leaks in (Ed25519 signatures are
/// deterministic too), so the same input gives a byte-identical dist dir — except for
/// `expires`, which is the build time plus ``expires``. On any error the temporary
/// directory is removed and an existing output is left untouched.
public struct BundleBuilder: Sendable {
    /// Apple's advice for asset packs: warn above 512 MiB, 64 MiB recommended.
    public static let packSizeWarning = ByteCount.mebibytes(512)
    public static let recommendedPackSize = ByteCount.mebibytes(64)

    public let resourceRoot: String
    public let specPath: String?
    public let logger: Logger
    public var chunkSize: ByteCount = Manifest.defaultChunkSize
    /// Signs the manifest (`--sign-key`); nil builds an unsigned bundle.
    public var signingKey: SigningKey?
    /// The manifest's expiry time in Unix seconds (`--expires`, already added to the
    /// build time); nil for none.
    public var expires: Int64?
    /// Tags in the order recorded traces first needed them (`--prefetch-from`); they lead
    /// the manifest's prefetch list, the spec's own prefetch tags follow.
    public var learnedPrefetch: [Tag] = []

    public init(resourceRoot: String, specPath: String? = nil, logger: Logger) {
        self.resourceRoot = resourceRoot
        self.specPath = specPath
        self.logger = logger
    }

    public func build(into distDir: String) throws(BuildError) -> BuildReport {
        let root = Self.trimmed(resourceRoot)
        let output = try OutputDirectory(path: Self.trimmed(distDir), resourceRoot: root)
        try output.checkReplaceable()
        let revision = try output.nextRevision()
        var warnings: [String] = []
        let (spec, specRelative) = try loadSpec(root: root, warnings: &warnings)
        let tree = try ResourceScanner(root: root, skippedPath: specRelative).scan()
        try tree.checkSymlinks(resourceRoot: root)
        let plan = PackPlan(tree: tree, spec: spec)
        warnings += plan.warnings

        output.removeStaleSiblings()
        let lockedStaging = try output.makeStagingDirectory()
        defer { lockedStaging.release() }
        let staging = lockedStaging.path
        do throws(BuildError) {
            let (manifest, rows, entries) = try write(tree: tree, root: root, plan: plan, spec: spec, revision: revision,
                                                     into: staging, warnings: &warnings)
            // Files were fsynced as written; now their names.
            for directory in [staging + "/packs", staging + "/index", staging] {
                do { try POSIXFile.syncDirectoryChecked(directory) } catch { throw BuildError.io(error, "fsync", directory) }
            }
            try output.publish(staging)
            for warning in warnings { logger.warning("build warning", metadata: ["warning": "\(warning)"]) }
            logger.info("bundle built", metadata: ["dist": "\(output.path)", "bundle.version": "\(manifest.bundleVersion)",
                                                   "packs": "\(rows.count)"])
            return BuildReport(distDir: output.path, bundleVersion: manifest.bundleVersion, rows: rows,
                               indexEntries: entries, warnings: warnings, revision: manifest.revision,
                               signer: signingKey?.publicKey.id, expires: manifest.expires)
        } catch {
            POSIXFile.removeTree(staging)
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

    private func write(tree: ResourceTree, root: String, plan: PackPlan, spec: TagSpec, revision: Int64, into staging: String,
                       warnings: inout [String]) throws(BuildError) -> (Manifest, [BuildReport.Row], Int) {
        for directory in ["packs", "index"] {
            do { try POSIXFile.makeDirectory(staging + "/" + directory) } catch { throw BuildError.io(error, "create", staging + "/" + directory) }
        }
        let writer = PackFileWriter(resourceRoot: root, chunkSize: chunkSize)
        var descriptors: [PackDescriptor] = []
        var rows: [BuildReport.Row] = []
        var placements: [String: PackFileWriter.Placement] = [:]
        placements.reserveCapacity(tree.files.count)
        for (position, pack) in plan.packs.enumerated() {
            let partial = staging + "/packs/.partial-\(position)"
            let result = try writer.write(files: pack.files.map { tree.files[$0] }, number: PackNumber(UInt32(position)), to: partial)
            let file = "packs/\(result.digests.sha256.hex).tar"
            do { try POSIXFile.rename(partial, staging + "/" + file) } catch { throw BuildError.io(error, "rename", partial) }
            for (path, placement) in result.placements { placements[path] = placement }
            descriptors.append(PackDescriptor(id: pack.id, tags: pack.tags, file: file, bytes: result.digests.bytes,
                                              sha256: result.digests.sha256, chunks: result.digests.chunks, files: pack.files.count))
            rows.append(BuildReport.Row(id: pack.id, tags: pack.tags, files: pack.files.count, bytes: result.digests.bytes))
            if result.digests.bytes > Self.packSizeWarning {
                warnings.append("pack '\(pack.id)' is \(result.digests.bytes), above the \(Self.packSizeWarning) limit (\(Self.recommendedPackSize) recommended); split its tags")
            }
            logger.debug("pack written", metadata: ["pack.id": "\(pack.id)", "pack.bytes": "\(result.digests.bytes.value)"])
        }

        let indexBytes: [UInt8]
        do {
            indexBytes = try FileIndexWriter(packCount: descriptors.count).encode(root: Self.place(tree.root, path: "", placements))
        } catch {
            throw BuildError(.io, path: nil, "cannot encode the file index: \(error)")
        }
        let indexHash = ContentHash.of(indexBytes)
        let indexFile = "index/\(indexHash.hex).\(FileIndex.fileExtension)"
        do { try POSIXFile.writeFile(staging + "/" + indexFile, indexBytes) } catch { throw BuildError.io(error, "write", staging + "/" + indexFile) }

        let tags = spec.rules.map { rule in
            TagDescriptor(tag: rule.tag, preservationPriority: spec.preservation[rule.tag] ?? 0,
                          packs: descriptors.filter { $0.tags.contains(rule.tag) }.map(\.id))
        }
        let index = IndexReference(file: indexFile, bytes: ByteCount(Int64(indexBytes.count)), sha256: indexHash,
                                   entries: tree.allPaths.count + 1)
        let manifest = Manifest(bundleVersion: Manifest.computeBundleVersion(index: indexHash, packs: descriptors),
                                chunkSize: chunkSize, index: index, packs: descriptors, tags: tags,
                                initialInstall: spec.initialInstall, prefetch: Self.prefetchList(spec, learned: learnedPrefetch),
                                revision: revision, expires: expires)
        // What every mount will check, checked here first: a bundle beyond BundleLimits or
        // otherwise unmountable fails the build instead of every mount.
        let encoded = manifest.encoded()
        do {
            try FileIndex(bytes: indexBytes).validate(against: Manifest.decode(encoded))
        } catch {
            throw BuildError(.tooLarge, path: nil, "the bundle would not be mountable: \(error)")
        }
        if let signingKey {
            // Signs the exact bytes written below; fsynced like them before anything is published.
            let signature: ManifestSignature
            do { signature = try signingKey.sign(encoded) } catch { throw BuildError(.io, path: nil, "cannot sign the manifest: \(error)") }
            let signaturePath = staging + "/" + ManifestSignature.fileName
            do { try POSIXFile.writeFile(signaturePath, Array(signature.fileContents.utf8)) } catch { throw BuildError.io(error, "write", signaturePath) }
        }
        let path = staging + "/" + Manifest.fileName
        do { try POSIXFile.writeFile(path, Array(encoded)) } catch { throw BuildError.io(error, "write", path) }
        return (manifest, rows, index.entries)
    }

    /// The tree with every file's pack and content offset filled in.
    private static func place(_ node: FileIndexWriter.Node, path: String,
                              _ placements: [String: PackFileWriter.Placement]) -> FileIndexWriter.Node {
        var node = node
        switch node.kind {
        case .regularFile:
            let placement = placements[path]
            node.pack = placement?.pack
            node.dataOffset = placement?.dataOffset ?? 0
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
