import ODRFSCore

/// The binary file index (`index/<hash>.odrx`) as a mount maps it.
enum FileIndexTarget {
    static func run(_ bytes: [UInt8]) {
        guard let index = try? FileIndex(bytes: bytes) else { return }
        // Validation promises that every accessor is safe on every entry, and that names
        // are sorted so lookups find each child under its own name.
        for raw in 0..<UInt32(index.entryCount) {
            let number = EntryNumber(raw)
            _ = index.entry(number)
            _ = index.symlinkTarget(of: number)
            // The digest table: only regular files have a hash, and it reads back as 32 bytes.
            if let digest = index.sha256(of: number) {
                check(index.entry(number)?.kind == .regularFile, "\(number) has a hash but is not a regular file")
                check(digest.digestBytes.count == ContentHash.byteCount, "\(number)'s hash is not 32 bytes")
            }
            // The block table: only non-empty regular files have block hashes, exactly
            // ⌈size / blockSize⌉ of them, and they read back without leaving the mapping.
            if let hashes = index.blockHashes(of: number) {
                let size = index.entry(number)?.size ?? 0
                let blockSize = UInt64(index.blockSize?.value ?? 0)
                check(index.entry(number)?.kind == .regularFile && size > 0, "\(number) has block hashes but is not a non-empty file")
                check(blockSize > 0 && UInt64(hashes.count) == size / blockSize + (size % blockSize == 0 ? 0 : 1),
                      "\(number) has \(hashes.count) block hashes for \(size) bytes")
            }
            // The chunk table (version 4, or version 3's blocks read as chunks): only
            // non-empty regular files have chunks; they cover the file exactly, in order,
            // each within the table's maximum, and the chunk holding an offset is found.
            if let chunks = index.chunks(of: number) {
                let size = Int64(clamping: index.entry(number)?.size ?? 0)
                check(index.entry(number)?.kind == .regularFile && size > 0, "\(number) has chunks but is not a non-empty file")
                var end: Int64 = 0
                for chunk in chunks {
                    check(chunk.offset == end && chunk.length >= 1, "\(number) has a chunk of \(chunk.length) at \(chunk.offset), expected one at \(end)")
                    if case .contentDefined(let parameters) = index.chunking {
                        check(chunk.length <= Int64(parameters.maximum), "\(number) has a chunk of \(chunk.length) bytes")
                    }
                    end = chunk.offset + chunk.length
                }
                check(end == size, "\(number)'s chunks cover \(end) of \(size) bytes")
                for probe in [0, size / 3, size - 1] where !chunks.isEmpty {
                    let found = index.chunk(of: number, containing: probe)
                    check(found.map { $0.range.contains(probe) } == true, "\(number): no chunk found at \(probe)")
                }
                check(index.chunk(of: number, containing: size) == nil, "\(number) has a chunk past its end")
            }
            let path = index.path(of: number)
            check(index.lookup(path: path) == number, "\(number) is not found at its own path \(path)")
            for child in index.children(of: number) {
                let found = index.withNameBytes(of: EntryNumber(child)) { index.lookup(parent: number, name: $0) }
                check(found == EntryNumber(child), "child \(child) of \(number) is not found by its name")
            }
        }
        // Out-of-range numbers must answer "nothing", not read past the mapping.
        let beyond = EntryNumber(UInt32(truncatingIfNeeded: index.entryCount))
        check(index.entry(beyond) == nil, "an entry past the end exists")
        _ = index.children(of: beyond)
        _ = index.path(of: beyond)
        check(index.sha256(of: beyond) == nil, "an entry past the end has a hash")
        check(index.blockHashes(of: beyond) == nil, "an entry past the end has block hashes")
        for number in index.filesWithBlockHashes {
            check(index.blockHashes(of: number) != nil, "\(number) is listed with block hashes but has none")
        }
        check(index.chunks(of: beyond) == nil, "an entry past the end has chunks")
        for number in index.filesWithChunks {
            check(index.chunks(of: number) != nil, "\(number) is listed with chunks but has none")
        }
        chunkMaps(index)
        resolveVariants(index)
    }

    /// Each pack's chunk map (what a download releases by and proves demanded ranges with):
    /// sorted, disjoint, inside the pack, whatever sizes and offsets the index claims.
    static func chunkMaps(_ index: FileIndex) {
        for pack in 0..<min(index.packCount, 8) {
            for packBytes: Int64 in [0, 1 << 20, 1 << 40] {
                let map = PackChunkMap(index: index, pack: PackNumber(UInt32(pack)), packBytes: packBytes)
                var end: Int64 = 0
                for chunk in map.chunks {
                    check(!chunk.range.isEmpty && chunk.range.lowerBound >= end && chunk.range.upperBound <= packBytes,
                          "chunk \(chunk.range) after \(end) in a pack of \(packBytes) bytes")
                    end = chunk.range.upperBound
                }
                _ = map.chunks(overlapping: 0..<packBytes)
            }
        }
    }

    /// The index as a mount of a bundle with variants serves it (``VariantView``): any
    /// directory name may claim to be a variant; resolving throws or gives a logical tree
    /// whose every file lies in a pack of the cut-down manifest.
    static func resolveVariants(_ index: FileIndex) {
        guard index.packCount <= 64 else { return }
        let manifest = variantManifest(packs: index.packCount)
        for explicit in [[:], ["tcf": ["astc"], "locale": ["it", "en"]]] as [[String: [String]]] {
            guard let preferences = try? VariantPreferences(wire: explicit) else { continue }
            let selection = VariantSelection(declarations: manifest.variantDeclarations, explicit: preferences.values,
                                             environment: ["LANG": "ja_JP.UTF-8"], machine: .init(memory: .gibibytes(16), cpus: 8))
            guard let view = try? VariantView.resolve(manifest: manifest, index: index, selection: selection) else { continue }
            check(view.index.packCount == view.manifest.packs.count, "the view's index and manifest disagree on packs")
            for raw in 0..<UInt32(view.index.entryCount) {
                let entry = view.index.entry(EntryNumber(raw))
                if let pack = entry?.pack { check(Int(pack.rawValue) < view.manifest.packs.count, "a file of the view is in no pack") }
                if entry?.kind == .directory, case .success? = VariantSuffix.parse(view.index.name(of: EntryNumber(raw))) {
                    check(false, "the view still shows a variant directory")
                }
            }
            for entry in view.variantOfEntry.keys {
                check(view.index.entry(entry) != nil, "a variant attribute for an entry the view lacks")
            }
        }
    }

    /// A manifest of `packs` packs declaring tcf and locale, as `VariantView` reads it.
    static func variantManifest(packs count: Int) -> Manifest {
        let zero = ContentHash.of([])
        let packs = (0..<max(count, 1)).map { number in
            PackDescriptor(id: PackID(number == 0 ? "base" : "p\(number)"), tags: [], file: "packs/\(number).tar",
                           bytes: ByteCount(1 << 40), sha256: zero, chunks: [], files: 0)
        }
        var manifest = Manifest(bundleVersion: zero, chunkSize: .mebibytes(1),
                                index: IndexReference(file: "index/x.odrx", bytes: .zero, sha256: zero, entries: 1),
                                packs: packs, tags: [], initialInstall: [], prefetch: [])
        let value = { (name: String) in VariantValue(validating: name)! }
        manifest.variants = [
            VariantDeclaration(key: VariantKey(validating: "tcf")!, values: ["astc", "etc2", "bc7"].map(value), defaultValue: value("etc2")),
            VariantDeclaration(key: VariantKey(validating: "locale")!, values: ["en", "it", "ja"].map(value), defaultValue: value("en")),
        ]
        return manifest
    }
}
