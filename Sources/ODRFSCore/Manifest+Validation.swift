extension Manifest {
    /// Checks every invariant the mount relies on; see ``ManifestError/Kind`` for the list and
    /// ``BundleLimits`` for the bounds on every number.
    func validate() throws(ManifestError) {
        guard format == Manifest.currentFormat else {
            throw ManifestError(.unsupportedFormat,
                                "format \(format) is not supported (this odrfs reads format \(Manifest.currentFormat))")
        }
        guard BundleLimits.revisionRange.contains(revision) else {
            throw ManifestError(.invalidRevision, "revision \(revision) is outside \(BundleLimits.revisionRange.lowerBound)...\(BundleLimits.revisionRange.upperBound)")
        }
        if let expires, !BundleLimits.expiryRange.contains(expires) {
            throw ManifestError(.invalidExpiry, "expires \(expires) is outside \(BundleLimits.expiryRange.lowerBound)...\(BundleLimits.expiryRange.upperBound) (Unix seconds)")
        }
        try validateMirrors()
        if let bundle, let problem = BundleIdentity.problem(with: bundle.rawValue) {
            throw ManifestError(.invalidBundleIdentity, "bundle: \(problem)")
        }
        guard BundleLimits.chunkSizeRange.contains(chunkSize) else {
            throw ManifestError(.invalidChunkSize, "chunkSize \(chunkSize.value) is outside \(BundleLimits.chunkSizeRange.lowerBound.value)...\(BundleLimits.chunkSizeRange.upperBound.value)")
        }
        if let problem = index.problem { throw problem }
        guard packs.count <= BundleLimits.maxPackCount else {
            throw ManifestError(.tooLarge, "has \(packs.count) packs; the limit is \(BundleLimits.maxPackCount)")
        }
        guard let first = packs.first, first.id == .base else {
            throw ManifestError(.missingBasePack, "packs[0] must be the base pack \"base\", found \(packs.first.map { "'\($0.id)'" } ?? "no packs")")
        }
        guard first.tags.isEmpty else {
            throw ManifestError(.inconsistent, "the base pack must have no tags, has \(first.tags.map(\.name))")
        }
        try validateVariants()
        let declaredTags = Set(tags.map(\.tag))
        var seen = Set<PackID>(minimumCapacity: packs.count)
        // The cache is keyed by content hash: two packs with one hash would share a file, and
        // evicting one would silently make the other not local and skew the cached byte count.
        var seenHashes = Set<ContentHash>(minimumCapacity: packs.count)
        try validateSizes()
        for (position, pack) in packs.enumerated() {
            guard seen.insert(pack.id).inserted else {
                throw ManifestError(.duplicatePack, "pack '\(pack.id)' appears twice")
            }
            guard seenHashes.insert(pack.sha256).inserted else {
                throw ManifestError(.duplicatePack, "pack '\(pack.id)' has the same sha256 \(pack.sha256.hex) as another pack")
            }
            try validate(pack: pack, at: position, declaredTags: declaredTags, previous: position > 0 ? packs[position - 1] : nil)
        }
        try validateTags()
        for (section, list) in [("initialInstall", initialInstall), ("prefetch", prefetch)] {
            for tag in list where !declaredTags.contains(tag) {
                throw ManifestError(.unknownTag, "\(section) names tag '\(tag)', which is not in tags")
            }
        }
        let expected = Manifest.computeBundleVersion(index: index.sha256, packs: packs, variants: variants)
        guard bundleVersion == expected else {
            throw ManifestError(.inconsistent, "bundleVersion \(bundleVersion) does not match the index and pack hashes (expected \(expected))")
        }
    }

    private func validate(pack: PackDescriptor, at position: Int, declaredTags: Set<Tag>,
                          previous: PackDescriptor?) throws(ManifestError) {
        if let problem = SafeRelativePath.problem(with: pack.file) {
            throw ManifestError(.unsafePath, "pack '\(pack.id)' file '\(pack.file)' \(problem)")
        }
        // Sizes are bounded by validateSizes() (bytes ≤ 2^52, chunkSize ≤ 2^30): no overflow.
        let needed = (pack.bytes.value + chunkSize.value - 1) / chunkSize.value
        guard Int64(pack.chunks.count) == needed else {
            throw ManifestError(.chunkCountMismatch,
                                "pack '\(pack.id)' has \(pack.chunks.count) chunk hashes but \(pack.bytes) needs \(needed)")
        }
        // A compressed pack's frame table: bounded, contiguous, one frame per chunk.
        _ = try FrameTable(validating: pack, chunkSize: chunkSize)
        for tag in pack.tags where !declaredTags.contains(tag) {
            throw ManifestError(.unknownTag, "pack '\(pack.id)' has tag '\(tag)', which is not in tags")
        }
        let variant = pack.variantAssignment
        // Strictly ascending by bytes is sorted and unique: `tags == Array(Set(tags)).sorted()`,
        // except that `Set` also merges canonically equal names ("e\u{301}", "\u{e9}"): only
        // names beyond ASCII can be, and only they take the `Set`.
        let sortedAndUnique = zip(pack.tags, pack.tags.dropFirst()).allSatisfy { $0 < $1 }
            && (pack.tags.allSatisfy(\.name.isASCII) || Set(pack.tags).count == pack.tags.count)
        guard sortedAndUnique, position == 0 || pack.id.isID(ofSortedTags: pack.tags, variant: variant) else {
            throw ManifestError(.inconsistent, "pack '\(pack.id)' does not match its tags \(pack.tags.map(\.name)) and variant '\(variant)' (expected id '\(PackID(tags: pack.tags, variant: variant))')")
        }
        if position == 0, !variant.isEmpty {
            throw ManifestError(.inconsistent, "the base pack must have no variant, has '\(variant)'")
        }
        for pair in variant.values {
            guard let declaration = variantDeclarations.first(where: { $0.key == pair.key }), declaration.values.contains(pair.value) else {
                throw ManifestError(.inconsistent, "pack '\(pack.id)' has variant \(pair.key)=\(pair.value), which the manifest's variants do not declare")
            }
        }
        if position > 1, let previous, !(previous.id < pack.id) {
            throw ManifestError(.misplacedPack, "packs after the base pack must be sorted by id: '\(pack.id)' comes after '\(previous.id)'")
        }
        if position > 0, pack.tags.isEmpty, variant.isEmpty {
            throw ManifestError(.duplicatePack, "pack '\(pack.id)' has no tags and no variant; only the base pack may be untagged")
        }
    }

    /// Every pack's size and file count, and their total, within ``BundleLimits``; before any
    /// arithmetic on them.
    private func validateSizes() throws(ManifestError) {
        var total = ByteCount.zero
        for pack in packs {
            guard pack.bytes.value >= 0, pack.files >= 0 else {
                throw ManifestError(.invalidSize, "pack '\(pack.id)' has a negative size or file count")
            }
            guard pack.bytes <= BundleLimits.maxTotalBytes else {
                throw ManifestError(.tooLarge, "pack '\(pack.id)' is \(pack.bytes.value) bytes; the limit is \(BundleLimits.maxTotalBytes.value)")
            }
            // Both terms ≤ 2^52: cannot overflow.
            total += pack.bytes
            guard total <= BundleLimits.maxTotalBytes else {
                throw ManifestError(.tooLarge, "packs add up to more than \(BundleLimits.maxTotalBytes.value) bytes (at pack '\(pack.id)')")
            }
        }
    }

    /// ``variants``: bounded, keys unique, each declaration consistent.
    private func validateVariants() throws(ManifestError) {
        guard let variants else { return }
        guard variants.count <= VariantDeclaration.maximumKeys else {
            throw ManifestError(.tooLarge, "declares \(variants.count) variant keys; the limit is \(VariantDeclaration.maximumKeys)")
        }
        var keys = Set<VariantKey>()
        for declaration in variants {
            guard keys.insert(declaration.key).inserted else {
                throw ManifestError(.inconsistent, "variant key '\(declaration.key)' is declared twice")
            }
            if let problem = declaration.problem { throw ManifestError(.inconsistent, problem) }
        }
    }

    private func validateTags() throws(ManifestError) {
        var places: [Tag: Int] = [:]
        places.reserveCapacity(tags.count)
        // Tags sort by bytes but compare as Strings do (canonically): "e\u{301}" and "\u{e9}"
        // are two declared tags and one key. Each such later name must list what the first
        // lists, which the packs then check, as when every tag's holders were compared.
        var aliases: [(position: Int, first: Int)] = []
        for (position, descriptor) in tags.enumerated() {
            if let problem = descriptor.tag.validationProblem {
                throw ManifestError(.invalidTag, "tag '\(descriptor.tag)': \(problem)")
            }
            if position > 0, !(tags[position - 1].tag < descriptor.tag) {
                throw ManifestError(.inconsistent, "tags must be sorted and unique: '\(descriptor.tag)' comes after '\(tags[position - 1].tag)'")
            }
            guard (0...1).contains(descriptor.preservationPriority) else {
                throw ManifestError(.priorityOutOfRange,
                                    "tag '\(descriptor.tag)' has preservationPriority \(descriptor.preservationPriority), outside 0...1")
            }
            if let first = places[descriptor.tag] {
                aliases.append((position, first))
            } else {
                places[descriptor.tag] = position
            }
        }
        // Each tag lists exactly the packs holding it, in pack order. One pass over the packs
        // matches every holder against the next pack its tag lists, instead of building each
        // tag's list of holders to compare (100,000 arrays at 100,000 tags, issue 28). Every
        // pack tag is declared (checked with the packs).
        var matched = [Int](repeating: 0, count: tags.count)
        for pack in packs {
            for tag in pack.tags {
                guard let place = places[tag] else { continue }
                let listed = tags[place].packs
                guard matched[place] < listed.count, listed[matched[place]] == pack.id else { throw holdersMismatch(tags[place]) }
                matched[place] += 1
            }
        }
        for (place, descriptor) in tags.enumerated() where places[descriptor.tag] == place && matched[place] != descriptor.packs.count {
            throw holdersMismatch(descriptor)
        }
        for (position, first) in aliases where tags[position].packs != tags[first].packs {
            throw holdersMismatch(tags[position])
        }
    }

    /// The error for a tag whose pack list is not the packs holding it (found by a scan:
    /// only a refused manifest pays for it).
    private func holdersMismatch(_ descriptor: TagDescriptor) -> ManifestError {
        let holders = packs.filter { $0.tags.contains(descriptor.tag) }.map(\.id)
        return ManifestError(.inconsistent, "tag '\(descriptor.tag)' lists packs \(descriptor.packs.map(\.rawValue)) but the packs holding it are \(holders.map(\.rawValue))")
    }
}

extension Manifest {
    /// ``mirrors``: bounded in number and length, http(s) only, printable ASCII (no spaces,
    /// no control characters that could forge a log line). Deeper checks (no credentials in
    /// the URL) are the fetcher's, which parses each one before use.
    func validateMirrors() throws(ManifestError) {
        guard let mirrors else { return }
        guard mirrors.count <= Self.maximumMirrors else {
            throw ManifestError(.tooLarge, "lists \(mirrors.count) mirrors; the limit is \(Self.maximumMirrors)")
        }
        for (position, url) in mirrors.enumerated() {
            let bytes = url.utf8
            let lowered = url.lowercased()
            guard bytes.count <= Self.maximumMirrorURLBytes,
                  bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
                  lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
                throw ManifestError(.invalidMirror, "mirrors[\(position)] is not an http(s) URL of at most \(Self.maximumMirrorURLBytes) printable ASCII characters")
            }
        }
    }
}

extension IndexReference {
    /// Why this reference cannot be used (a path out of the dist dir, a size or entry count
    /// beyond ``BundleLimits``), or nil: checked by ``Manifest/decode(_:)`` and, before the
    /// rest is decoded, by ``ManifestReader/indexReference(in:)``.
    var problem: ManifestError? {
        if let problem = SafeRelativePath.problem(with: file) {
            return ManifestError(.unsafePath, "index file '\(file)' \(problem)")
        }
        guard bytes.value >= 0, entries >= 1 else {
            return ManifestError(.invalidSize, "index has \(bytes.value) bytes and \(entries) entries; needs at least the root entry")
        }
        guard bytes <= BundleLimits.maxIndexBytes, entries <= Int(UInt32.max) else {
            return ManifestError(.tooLarge, "index has \(bytes.value) bytes and \(entries) entries; the limits are \(BundleLimits.maxIndexBytes.value) bytes and \(UInt32.max) entries")
        }
        return nil
    }
}
