import Foundation
import Logging
import ODRFSCore

/// Writes one revision's objects into a locked dist dir — every pack, then the file index —
/// and assembles its manifest, which ``BundleBuilder`` publishes. Objects that the dist dir
/// already holds (an unchanged pack or index of a kept revision) are reused, not rewritten.
struct BundleWriter {
    /// What the writer put into the dist dir so far: a failed build removes exactly these.
    struct Written {
        /// Dist-relative names of objects this build created (not reused).
        var created: [String] = []
        var reusedPacks = 0
    }

    /// A written revision, not yet published.
    struct Bundle {
        var manifest: Manifest
        /// The exact manifest bytes to publish (and sign).
        var encoded: Data
        var rows: [BuildReport.Row]
        var indexEntries: Int
    }

    let output: OutputDirectory
    let resourceRoot: String
    let chunkSize: ByteCount
    let compression: CompressionSetting
    let indexChunking: IndexChunking
    let logger: Logger

    func write(tree: ResourceTree, plan: PackPlan, spec: TagSpec, identity: BundleIdentity, learnedPrefetch: [ODRFSCore.Tag], revision: Int64, expires: Int64?,
               written: inout Written, warnings: inout [String]) throws(BuildError) -> Bundle {
        let writer = PackFileWriter(resourceRoot: resourceRoot, chunkSize: chunkSize, indexChunking: indexChunking)
        var descriptors: [PackDescriptor] = []
        var rows: [BuildReport.Row] = []
        var placements: [String: PackFileWriter.Placement] = [:]
        placements.reserveCapacity(tree.files.count)
        var pending: [OutputDirectory.PendingObject] = []
        var pendingAddresses: Set<String> = []
        let publishedCompressions = compression == .none ? [:] : output.publishedCompressions()
        for (position, pack) in plan.packs.enumerated() {
            let temporary = output.temporaryPath(in: OutputDirectory.packsDirectory, "\(position).tar")
            let result = try writer.write(files: pack.files.map { tree.files[$0] }, number: PackNumber(UInt32(position)),
                                          to: temporary, sync: false)
            let (file, stored, fresh) = try store(temporary, sha256: result.digests.sha256, position: position, cuts: result.frameCuts)
            var compressed = fresh
            // A compressed file already published under this name keeps its bytes and frame
            // table (a release before this one may have cut the same tar differently).
            if let ours = fresh, let published = publishedCompressions[file], published != ours,
               output.hasObject(file, bytes: published.bytes) {
                compressed = published
            }
            // Unchanged since a kept revision: the copy is dropped before it is ever synced
            // (compression is deterministic, so the same tar gives the same frames).
            let storedBytes = compressed?.bytes ?? result.digests.bytes
            if output.hasObject(file, bytes: storedBytes) || pendingAddresses.contains(file) {
                unlink(stored)
                written.reusedPacks += 1
            } else {
                pending.append(OutputDirectory.PendingObject(temporary: stored, relative: file))
                pendingAddresses.insert(file)
            }
            for (path, placement) in result.placements { placements[path] = placement }
            descriptors.append(PackDescriptor(id: pack.id, tags: pack.tags, file: file, bytes: result.digests.bytes,
                                              sha256: result.digests.sha256, chunks: result.digests.chunks, files: pack.files.count,
                                              compression: compressed, variant: pack.variant))
            rows.append(BuildReport.Row(id: pack.id, tags: pack.tags, files: pack.files.count, bytes: result.digests.bytes,
                                        compressedBytes: compressed?.bytes))
            if result.digests.bytes > BundleBuilder.packSizeWarning {
                warnings.append("pack '\(pack.id)' is \(result.digests.bytes), above the \(BundleBuilder.packSizeWarning) limit (\(BundleBuilder.recommendedPackSize) recommended); split its tags")
            }
            logger.debug("pack written", metadata: ["pack.id": "\(pack.id)", "pack.bytes": "\(result.digests.bytes.value)"])
        }

        // Listed before they exist, so that a failure half-way removes whatever got renamed.
        written.created += pending.map(\.relative)
        try output.publishObjects(pending)

        // The placements go once the tree has them; the placed tree is the encoder's to
        // release as it goes.
        let placed = BundleBuilder.place(tree.root, path: "", placements)
        placements = [:]
        let (indexFile, indexSize, indexHash) = try writeIndex(consume placed, packCount: descriptors.count,
                                                               entries: tree.allPaths.count + 1, written: &written)

        // One pass over the packs for all tags (a filter per tag was tags × packs).
        var packsByTag: [ODRFSCore.Tag: [PackID]] = [:]
        for descriptor in descriptors {
            for tag in descriptor.tags { packsByTag[tag, default: []].append(descriptor.id) }
        }
        let tags = spec.rules.map { rule in
            TagDescriptor(tag: rule.tag, preservationPriority: spec.preservation[rule.tag] ?? 0, packs: packsByTag[rule.tag] ?? [])
        }
        let index = IndexReference(file: indexFile, bytes: indexSize, sha256: indexHash, entries: tree.allPaths.count + 1)
        let variants = spec.variants.isEmpty ? nil : spec.variants
        var manifest = Manifest(bundleVersion: Manifest.computeBundleVersion(index: indexHash, packs: descriptors, variants: variants),
                                chunkSize: chunkSize, index: index, packs: descriptors, tags: tags,
                                initialInstall: spec.initialInstall, prefetch: BundleBuilder.prefetchList(spec, learned: learnedPrefetch),
                                revision: revision, expires: expires)
        manifest.variants = variants
        manifest.bundle = identity
        // What every mount will check, checked here first: a bundle beyond BundleLimits or
        // otherwise unmountable fails the build instead of every mount.
        let encoded = manifest.encoded()
        guard encoded.count <= Manifest.maximumBytes.value else {
            throw BuildError(.tooLarge, path: nil, "the bundle would not be mountable: its manifest.json would be \(ByteCount(Int64(encoded.count))) (\(descriptors.count) packs), over the \(Manifest.maximumBytes) that mounts read; use fewer tag sets")
        }
        do {
            let decoded = try Manifest.decode(encoded)
            let index = try FileIndex(contentsOf: output.path + "/" + indexFile)
            try index.validate(against: decoded)
            // And its logical tree as a mount with the default selection serves it.
            if let declarations = decoded.variants {
                let selection = VariantSelection(declarations: declarations, explicit: [:], environment: [:],
                                                 machine: .init(memory: .zero, cpus: 0))
                _ = try VariantView.resolve(manifest: decoded, index: index, selection: selection)
            }
        } catch let error as FileIndexError where error.kind == .io {
            throw BuildError(.io, path: output.path + "/" + indexFile, "cannot read the file index back: \(error)")
        } catch {
            throw BuildError(.tooLarge, path: nil, "the bundle would not be mountable: \(error)")
        }
        return Bundle(manifest: manifest, encoded: encoded, rows: rows, indexEntries: index.entries)
    }

    /// Encodes the placed tree as the file index, in parts, never one buffer (ten million
    /// files make a 1 GB index, issue 28), and writes it under its hash unless the dist dir
    /// has it; the parts are freed when this returns. The index is checked afterwards from
    /// the dist dir's file, as mounts will read it.
    private func writeIndex(_ placed: consuming FileIndexWriter.Node, packCount: Int, entries: Int,
                            written: inout Written) throws(BuildError) -> (file: String, size: ByteCount, sha256: ContentHash) {
        let encoded: EncodedIndex
        do {
            encoded = try FileIndexWriter(packCount: packCount, chunking: indexChunking)
                .encodeParts(root: consume placed, entryCountHint: entries)
        } catch {
            throw BuildError(.io, path: nil, "cannot encode the file index: \(error)")
        }
        let hash = encoded.sha256
        let file = "\(OutputDirectory.indexDirectory)/\(hash.hex).\(FileIndex.fileExtension)"
        let size = ByteCount(Int64(encoded.byteCount))
        // Known before it is written, unlike a pack's: an unchanged index is not written at all.
        if !output.hasObject(file, bytes: size) {
            let temporary = output.temporaryPath(in: OutputDirectory.indexDirectory, "index")
            do { try POSIXFile.writeFile(temporary, parts: encoded.parts) } catch { throw BuildError.io(error, "write", temporary) }
            do { try POSIXFile.rename(temporary, output.path + "/" + file) } catch { throw BuildError.io(error, "rename", temporary) }
            written.created.append(file)
        }
        return (file, size, hash)
    }
}
