import ODRFSCore
import ODRFSStore
import ODRFSFetch

/// What moving from the mounted revision to an available one costs, computed from the two
/// manifests and file indexes alone (no I/O but page faults in the mapped indexes): which
/// packs changed, which of them this mount fetches, and for each how it is assembled.
///
/// A pack changed when no pack of the mounted revision has its content hash. Of the changed
/// packs, a mount fetches those whose tag set is that of a pack local (or retained) now,
/// plus the untagged packs (the base and its variants) and the initial-install tags' packs,
/// which a mount always keeps local;
/// the others stay remote and download on first open, as before.
///
/// For each fetched pack a ``PackAssemblyPlan`` says which bytes the cache already holds
/// (whole files by SHA-256 — index version 2 — rebuilt tar framing, matching chunks, and
/// blocks of large files by their hashes — index version 3) and which must be fetched. `downloadBytes` is an upper bound: a changed file whose old
/// version is cached is guessed in first, and only its chunks that then fail are fetched.
/// It counts what crosses the wire: for a compressed pack, the frames of the chunks the
/// remote spans touch (``PackSpanFetcher/transferBytes(of:chunkSize:spans:)``).
struct UpdatePlan: Sendable {
    /// Bytes of a new pack that a local file already holds.
    struct ReusedSpan: Sendable, Equatable {
        /// Where the bytes go in the new pack.
        var target: Int64
        var length: Int64
        /// The mounted revision's pack holding them, and where.
        var source: PackNumber
        var sourceOffset: Int64
    }

    /// One changed pack this mount fetches.
    struct PackFetch: Sendable {
        /// The pack in the available manifest.
        var pack: PackNumber
        var assembly: PackAssemblyPlan
        var reusedBytes: Int64
        /// `bytes − reusedBytes`: the spans to download, in bytes of the uncompressed pack.
        var downloadBytes: Int64
        /// What downloading them transfers: `downloadBytes` for a plain tar pack, the
        /// compressed frames holding them for a compressed one.
        var wireBytes: Int64
    }

    /// Packs of the available manifest with new content, in manifest order.
    var changedPacks: [PackNumber]
    /// The changed packs this mount fetches before switching.
    var fetches: [PackFetch]
    var downloadBytes: Int64
    var reusedBytes: Int64

    /// `heldTags`: tags that held requests retain now; every changed pack of theirs is
    /// fetched, so that the requests can retain the new packs at the switch.
    /// `otherBundles` (asked only when a pack is fetched and the new index has chunks) and `present` name
    /// more places chunks may be copied from: the other bundles of a machine-wide store,
    /// whose packs count where `present` says the store holds them. Blocking when those do
    /// I/O: on the I/O executor.
    static func make(mounted: Manifest, mountedIndex: FileIndex, local: Set<PackNumber>,
                     available: Manifest, availableIndex: FileIndex, heldTags: Set<Tag> = [],
                     otherBundles: () -> [PackStore.OtherBundle] = { [] },
                     present: (PackDescriptor) -> Bool = { _ in false }) -> UpdatePlan {
        let mountedHashes = Set(mounted.packs.map(\.sha256))
        let changed = available.packs.indices.filter { !mountedHashes.contains(available.packs[$0].sha256) }
            .map { PackNumber(UInt32($0)) }
        // By tag set and variant keys, not id: a variant switch replaces `Level1[tcf=bc7]`
        // with `Level1[tcf=astc]`, the same tags' files in another value of the same key
        // (but a local plain `Level1` does not call for `Level1[tcf=astc]`). Without
        // variants this is the id.
        let localKinds = Set(local.compactMap { mounted.packIfPresent($0).map(PackKind.init) })
        let kept = Set((available.initialInstall + Array(heldTags)).flatMap { available.packs(for: $0) })
        let fetched = changed.filter { number in
            let pack = available.pack(number)
            // Untagged packs (the base, and its variants) are always local.
            return pack.tags.isEmpty || kept.contains(number) || localKinds.contains(PackKind(pack))
        }
        let files = filesByPack(Set(fetched), in: availableIndex)
        var spans = reusableSpans(of: Set(fetched), mounted: mountedIndex, local: local, available: availableIndex)
        let chunks = available.chunkSize == mounted.chunkSize ? chunkSources(mounted, local: local) : [:]
        var blocks = LocalChunks()
        if !fetched.isEmpty, availableIndex.chunking != nil {
            blocks.add(mountedIndex) { local.contains($0) ? mounted.packIfPresent($0) : nil }
            var seen: [ContentHash: Bool] = [:]
            for other in otherBundles() {
                blocks.add(other.index) { number in
                    guard let pack = other.manifest.packIfPresent(number) else { return nil }
                    if seen[pack.sha256] == nil { seen[pack.sha256] = present(pack) }
                    return seen[pack.sha256] == true ? pack : nil
                }
            }
        }
        var fetches: [PackFetch] = []
        var download: Int64 = 0, reused: Int64 = 0
        for number in fetched {
            let descriptor = available.pack(number)
            let packFiles = files[number] ?? []
            let assembly = PackAssemblyPlan.make(
                pack: descriptor, chunkSize: available.chunkSize, files: packFiles,
                fileReuse: spans.removeValue(forKey: number) ?? [],
                framingMatches: PackAssemblyPlan.framingMatches(pack: descriptor, files: packFiles, index: availableIndex),
                chunkSources: chunks,
                blockCopies: { file in
                    guard !blocks.isEmpty, let chunks = availableIndex.chunks(of: file.entry) else { return nil }
                    return blocks.copies(for: file, chunks: chunks)
                },
                previousVersion: { file in
                    previousVersion(of: file, in: availableIndex, mounted: mountedIndex, local: local)
                })
            let missing = assembly.remoteBytes
            let reusedBytes = max(descriptor.bytes.value - missing, 0)
            let wire = PackSpanFetcher.transferBytes(of: descriptor, chunkSize: available.chunkSize, spans: assembly.remote)
            fetches.append(PackFetch(pack: number, assembly: assembly, reusedBytes: reusedBytes, downloadBytes: missing,
                                     wireBytes: wire))
            download = download.addingReportingOverflow(wire).overflow ? .max : download + wire
            reused = reused.addingReportingOverflow(reusedBytes).overflow ? .max : reused + reusedBytes
        }
        return UpdatePlan(changedPacks: changed, fetches: fetches, downloadBytes: download, reusedBytes: reused)
    }

    /// The files of each pack in `packs`, sorted by offset.
    private static func filesByPack(_ packs: Set<PackNumber>, in index: FileIndex) -> [PackNumber: [PackAssemblyPlan.File]] {
        guard !packs.isEmpty else { return [:] }
        var files: [PackNumber: [PackAssemblyPlan.File]] = [:]
        for raw in 0..<UInt32(index.entryCount) {
            let number = EntryNumber(raw)
            guard let entry = index.entry(number), let pack = entry.pack, packs.contains(pack),
                  let extent = entry.packExtent else { continue }
            files[pack, default: []].append(PackAssemblyPlan.File(entry: number, extent: extent.offset..<(extent.offset + extent.size)))
        }
        for key in files.keys { files[key]?.sort { $0.extent.lowerBound < $1.extent.lowerBound } }
        return files
    }

    /// The same path's file in a local pack of the mounted revision, if it has the same size.
    private static func previousVersion(of file: PackAssemblyPlan.File, in index: FileIndex, mounted: FileIndex,
                                        local: Set<PackNumber>) -> ReusedSpan? {
        guard let old = mounted.lookup(path: index.path(of: file.entry)), let entry = mounted.entry(old),
              entry.kind == .regularFile, let pack = entry.pack, local.contains(pack),
              Int64(clamping: entry.size) == Int64(file.extent.count) else { return nil }
        return ReusedSpan(target: file.extent.lowerBound, length: Int64(file.extent.count), source: pack, sourceOffset: entry.packOffset)
    }

    /// Every chunk of the local packs of the mounted revision, by hash.
    private static func chunkSources(_ mounted: Manifest, local: Set<PackNumber>) -> [ContentHash: PackAssemblyPlan.ChunkSource] {
        var sources: [ContentHash: PackAssemblyPlan.ChunkSource] = [:]
        let size = mounted.chunkSize.value
        guard size > 0 else { return [:] }
        for number in local {
            guard let pack = mounted.packIfPresent(number) else { continue }
            for (index, hash) in pack.chunks.enumerated() {
                let (start, overflow) = Int64(index).multipliedReportingOverflow(by: size)
                guard !overflow, start < pack.bytes.value else { break }
                sources[hash] = PackAssemblyPlan.ChunkSource(pack: number, offset: start, length: min(size, pack.bytes.value - start))
            }
        }
        return sources
    }

    /// For each pack in `packs`, its files that a local pack of the mounted revision holds
    /// with the same SHA-256 and size. O(entries of both indexes); nothing without digests.
    private static func reusableSpans(of packs: Set<PackNumber>, mounted: FileIndex, local: Set<PackNumber>,
                                      available: FileIndex) -> [PackNumber: [ReusedSpan]] {
        guard !packs.isEmpty, !local.isEmpty, mounted.hasFileDigests, available.hasFileDigests else { return [:] }
        var sources: [ContentHash: (pack: PackNumber, offset: Int64, size: UInt64)] = [:]
        for raw in 0..<UInt32(mounted.entryCount) {
            let number = EntryNumber(raw)
            guard let entry = mounted.entry(number), let pack = entry.pack, local.contains(pack), entry.size > 0,
                  let hash = mounted.sha256(of: number) else { continue }
            sources[hash] = (pack, entry.packOffset, entry.size)
        }
        var spans: [PackNumber: [ReusedSpan]] = [:]
        for raw in 0..<UInt32(available.entryCount) {
            let number = EntryNumber(raw)
            guard let entry = available.entry(number), let pack = entry.pack, packs.contains(pack),
                  let hash = available.sha256(of: number), let source = sources[hash], source.size == entry.size else { continue }
            spans[pack, default: []].append(ReusedSpan(target: entry.packOffset, length: Int64(clamping: entry.size),
                                                        source: source.pack, sourceOffset: source.offset))
        }
        return spans
    }
}

/// What a pack holds regardless of the value of its variant keys: its tag set and which
/// keys it has a value for.
private struct PackKind: Hashable {
    let tags: [Tag]
    let keys: [VariantKey]

    init(_ pack: PackDescriptor) {
        tags = pack.tags
        keys = pack.variantAssignment.values.map(\.key)
    }
}
