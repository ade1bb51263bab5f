/// One bundle revision as a mount with a given ``VariantSelection`` serves it: the logical
/// tree (no `#KEY_VALUE` suffixes; each path resolved to its best variant) and the manifest
/// cut down to the packs that tree uses.
///
/// The published index keeps the physical tree, where `Textures#tcf_astc/a.ktx` and
/// `Textures#tcf_bc7/a.ktx` are two entries. ``resolve(manifest:index:selection:)`` walks it
/// once and writes an ordinary ``FileIndex`` of the logical tree, so lookup, listing,
/// attributes, reads, block hashes and updates work on it unchanged:
///
/// - A logical directory is the union of every physical directory of that logical path
///   whose assignment the selection accepts (``VariantSelection/rank(of:)`` not nil); its
///   attributes are those of the best-ranked one. A file or symlink is the best-ranked of
///   its candidates; a path with no accepted candidate does not exist.
/// - ``manifest`` keeps the base pack and every pack a resolved file is in, in published
///   order (renumbered), and each tag's packs cut to those: the origin is never asked for
///   another variant's pack, and no other variant's pack takes cache space. Its
///   `bundleVersion`, `index.file` and `index.sha256` still name the published bundle;
///   `index.entries` counts the logical tree.
///
/// A bundle that declares no variants resolves to itself, with no work and no copy.
/// The published index is hostile input: a suffix the manifest does not declare, a key
/// twice in one path, or one logical path that is a file in one variant and a directory in
/// another throws ``FileIndexError`` (`odrfs build` refuses to write such a bundle).
public struct VariantView: Sendable {
    public let manifest: Manifest
    public let index: FileIndex
    /// The variant of each served entry that came from a variant directory (for the
    /// `user.odrfs.variant` attribute); empty without variants.
    public let variantOfEntry: [EntryNumber: VariantAssignment]

    /// A view as given (a bundle served without resolving, such as an empty tree).
    public init(manifest: Manifest, index: FileIndex, variantOfEntry: [EntryNumber: VariantAssignment]) {
        self.manifest = manifest
        self.index = index
        self.variantOfEntry = variantOfEntry
    }

    public static func resolve(manifest: Manifest, index: FileIndex,
                               selection: VariantSelection) throws(FileIndexError) -> VariantView {
        guard let declarations = manifest.variants, !declarations.isEmpty else {
            return VariantView(manifest: manifest, index: index, variantOfEntry: [:])
        }
        // Pack numbers are renumbered through the manifest's list: they must index it
        // (``FileIndex/validate(against:)`` checks this and more; a caller may not have).
        guard index.packCount == manifest.packs.count else {
            throw FileIndexError(.corrupt, "is for \(index.packCount) packs but the manifest has \(manifest.packs.count)")
        }
        var resolver = Resolver(index: index, declarations: declarations, selection: selection)
        let root = try resolver.directory(name: "", candidates: [Candidate(entry: .root, assignment: .none, rank: [])], depth: 0)
        // Packs: the base, then the used ones in published order.
        var renumbered = [UInt32](repeating: UInt32.max, count: manifest.packs.count)
        var packs: [PackDescriptor] = []
        for (number, pack) in manifest.packs.enumerated() where number == 0 || resolver.usedPacks.contains(UInt32(number)) {
            renumbered[number] = UInt32(packs.count)
            packs.append(pack)
        }
        let logicalRoot = Self.renumber(root, renumbered)
        let bytes = try FileIndexWriter(packCount: packs.count, chunking: index.chunking ?? .contentDefined(.standard))
            .encode(root: logicalRoot)
        let logical = try FileIndex(bytes: bytes)
        var derived = manifest
        let kept = Set(packs.map(\.id))
        derived.packs = packs
        derived.tags = manifest.tags.map { tag in
            var tag = tag
            tag.packs = tag.packs.filter { kept.contains($0) }
            return tag
        }
        derived.index.entries = logical.entryCount
        var variantOfEntry: [EntryNumber: VariantAssignment] = [:]
        for (path, assignment) in resolver.assignedPaths {
            if let entry = logical.lookup(path: path) { variantOfEntry[entry] = assignment }
        }
        return VariantView(manifest: derived, index: logical, variantOfEntry: variantOfEntry)
    }

    private static func renumber(_ node: FileIndexWriter.Node, _ map: [UInt32]) -> FileIndexWriter.Node {
        var node = node
        if let pack = node.pack { node.pack = PackNumber(map[Int(pack.rawValue)]) }
        node.children = node.children.map { renumber($0, map) }
        return node
    }

    struct Candidate {
        var entry: EntryNumber
        var assignment: VariantAssignment
        var rank: [Int]
    }

    /// One walk of the physical tree.
    struct Resolver {
        let index: FileIndex
        let declarations: [VariantDeclaration]
        let selection: VariantSelection
        var usedPacks = Set<UInt32>()
        /// Logical paths of served entries with a non-empty assignment.
        var assignedPaths: [(String, VariantAssignment)] = []
        var path: [String] = []

        init(index: FileIndex, declarations: [VariantDeclaration], selection: VariantSelection) {
            self.index = index
            self.declarations = declarations
            self.selection = selection
        }

        var currentPath: String { path.joined(separator: "/") }

        /// The logical directory made of `candidates` (accepted, best first).
        mutating func directory(name: String, candidates: [Candidate], depth: Int) throws(FileIndexError) -> FileIndexWriter.Node {
            guard depth <= BundleLimits.maxVariantTreeDepth else {
                throw FileIndexError(.invalidTree, "directories nest deeper than \(BundleLimits.maxVariantTreeDepth) levels", path: currentPath)
            }
            var groups: [String: [Candidate]] = [:]
            for parent in candidates {
                for raw in index.children(of: parent.entry) {
                    let child = EntryNumber(raw)
                    let childName = index.name(of: child)
                    var logicalName = childName
                    var assignment = parent.assignment
                    if index.entry(child)?.kind == .directory, let parsed = VariantSuffix.parse(childName) {
                        let suffix: VariantSuffix
                        switch parsed {
                        case .success(let value): suffix = value
                        case .failure(let problem): throw FileIndexError(.invalidTree, "variant directory \(problem)", path: index.path(of: child))
                        }
                        guard let declaration = declarations.first(where: { $0.key == suffix.key }),
                              declaration.values.contains(suffix.value) else {
                            throw FileIndexError(.invalidTree, "'\(childName)' names variant \(suffix.key)=\(suffix.value), which the manifest does not declare", path: index.path(of: child))
                        }
                        guard let combined = assignment.adding(suffix.key, suffix.value) else {
                            throw FileIndexError(.invalidTree, "'\(childName)' gives key '\(suffix.key)' a second value in one path", path: index.path(of: child))
                        }
                        logicalName = suffix.logicalName
                        assignment = combined
                    }
                    guard let rank = selection.rank(of: assignment) else { continue }
                    groups[logicalName, default: []].append(Candidate(entry: child, assignment: assignment, rank: rank))
                }
            }
            guard let own = candidates.first, let attributes = index.entry(own.entry) else {
                throw FileIndexError(.invalidTree, "a logical directory without a physical one", path: currentPath)
            }
            var node = FileIndexWriter.Node.directory(name, permissions: attributes.permissions,
                                                      modificationTime: attributes.modificationTime)
            for (logicalName, group) in groups {
                // Best first; ties (one logical path and variant written twice) by entry number.
                let ordered = group.sorted { $0.rank != $1.rank ? $0.rank.lexicographicallyPrecedes($1.rank) : $0.entry < $1.entry }
                let kinds = Set(ordered.compactMap { index.entry($0.entry)?.kind })
                path.append(logicalName)
                defer { path.removeLast() }
                guard kinds.count == 1, let kind = kinds.first else {
                    throw FileIndexError(.invalidTree, "is a directory in one variant and not in another", path: currentPath)
                }
                if kind == .directory {
                    node.children.append(try directory(name: logicalName, candidates: ordered, depth: depth + 1))
                } else {
                    node.children.append(try leaf(name: logicalName, best: ordered[0]))
                }
            }
            return node
        }

        mutating func leaf(name: String, best: Candidate) throws(FileIndexError) -> FileIndexWriter.Node {
            guard let entry = index.entry(best.entry) else {
                throw FileIndexError(.invalidTree, "entry \(best.entry) is out of range", path: currentPath)
            }
            if !best.assignment.isEmpty { assignedPaths.append((currentPath, best.assignment)) }
            switch entry.kind {
            case .symlink:
                return .symlink(name, target: index.symlinkTarget(of: best.entry) ?? "", permissions: entry.permissions,
                                modificationTime: entry.modificationTime)
            case .regularFile, .directory:
                let pack = entry.pack ?? .base
                usedPacks.insert(pack.rawValue)
                var node = FileIndexWriter.Node.file(name, size: entry.size, pack: pack, dataOffset: entry.dataOffset,
                                                     permissions: entry.permissions, modificationTime: entry.modificationTime,
                                                     sha256: index.sha256(of: best.entry))
                if case .contentDefined = index.chunking {
                    node.chunks = index.chunks(of: best.entry)
                } else {
                    node.blockHashes = index.blockHashes(of: best.entry)
                }
                return node
            }
        }
    }
}
