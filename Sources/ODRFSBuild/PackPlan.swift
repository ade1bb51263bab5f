import ODRFSCore

/// Which files go into which pack: each file's tag set is every tag with a pattern covering
/// its logical path (variant suffixes removed, see ``VariantLayout``), and files with exactly
/// the same tag set and variant share a pack (`Level1`, `Level1[tcf=astc]`, `base[locale=it]`),
/// so no file is stored twice. The base pack (untagged files outside every variant) is always
/// first, even when empty; the rest are sorted by id.
struct PackPlan: Sendable {
    struct Pack: Sendable {
        var id: PackID
        var tags: [ODRFSCore.Tag]
        /// The variant of every file in the pack.
        var variant: VariantAssignment
        /// Indexes into ``ResourceTree/files``, in scan order.
        var files: [Int]
    }

    var packs: [Pack]
    /// Human-readable warnings about the spec: patterns that match nothing, tags without files.
    var warnings: [String]

    init(tree: ResourceTree, spec: TagSpec, layout: VariantLayout? = nil) {
        // Without variants a file's logical path is its path: its components are made one
        // file at a time, not kept for all of them.
        var matched = Array(repeating: [Bool](), count: spec.rules.count)
        for (r, rule) in spec.rules.enumerated() { matched[r] = Array(repeating: false, count: rule.patterns.count) }
        // Only the patterns whose literal prefix the path starts with are tried: with a tag
        // per directory that is one or two per file instead of every pattern of the spec.
        let trie = PatternTrie(spec: spec)
        var byID: [PackID: Pack] = [.base: Pack(id: .base, tags: [], variant: .none, files: [])]
        var ruleTagged = Array(repeating: false, count: spec.rules.count)
        var taggedRules: [Int] = []
        for index in tree.files.indices {
            let components = layout?.logicalComponents[index] ?? tree.files[index].components
            taggedRules.removeAll(keepingCapacity: true)
            // Every candidate is tried (not just until one hits) so that unused patterns can be reported.
            for candidate in trie.candidates(for: components)
            where spec.rules[candidate.rule].patterns[candidate.pattern].matchesSelfOrAncestor(components) {
                matched[candidate.rule][candidate.pattern] = true
                if !ruleTagged[candidate.rule] {
                    ruleTagged[candidate.rule] = true
                    taggedRules.append(candidate.rule)
                }
            }
            for rule in taggedRules { ruleTagged[rule] = false }
            // Rules are sorted by tag, so sorted rule numbers give the tags in order.
            let tags = taggedRules.sorted().map { spec.rules[$0].tag }
            let variant = layout?.assignments[index] ?? VariantAssignment.none
            let id = PackID(tags: tags, variant: variant)
            byID[id, default: Pack(id: id, tags: tags, variant: variant, files: [])].files.append(index)
        }
        var warnings: [String] = []
        Self.markPatternsMatchingOtherEntries(paths: layout?.logicalPaths ?? tree.allPaths, spec: spec, trie: trie, matched: &matched)
        // One pass over the packs, not one per tag.
        var usedTags = Set<ODRFSCore.Tag>()
        for pack in byID.values { usedTags.formUnion(pack.tags) }
        for (r, rule) in spec.rules.enumerated() {
            for (p, pattern) in rule.patterns.enumerated() where !matched[r][p] {
                warnings.append("tag '\(rule.tag)': pattern '\(pattern)' matches nothing")
            }
            if !usedTags.contains(rule.tag) {
                warnings.append("tag '\(rule.tag)' has no files")
            }
        }
        let base = byID.removeValue(forKey: .base)!
        self.packs = [base] + byID.values.sorted { $0.id < $1.id }
        self.warnings = warnings
    }

    /// A pattern naming only empty directories or symlinks is used, even though it tags no
    /// file: marks those, testing each directory and symlink only against its candidates
    /// (files were tested already, and a pattern matching a file also covers it).
    private static func markPatternsMatchingOtherEntries(paths: [String], spec: TagSpec, trie: PatternTrie,
                                                         matched: inout [[Bool]]) {
        guard matched.contains(where: { $0.contains(false) }) else { return }
        for path in paths {
            let components = path.slashSeparated()
            for candidate in trie.candidates(for: components) where !matched[candidate.rule][candidate.pattern] {
                if spec.rules[candidate.rule].patterns[candidate.pattern].matches(components) {
                    matched[candidate.rule][candidate.pattern] = true
                }
            }
        }
    }
}
