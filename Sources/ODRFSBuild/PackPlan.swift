import ODRFSCore

/// Which files go into which pack: each file's tag set is every tag with a pattern covering it,
/// and files with exactly the same tag set share a pack, so no file is stored twice. The base
/// pack (untagged files) is always first, even when empty; the rest are sorted by id.
struct PackPlan: Sendable {
    struct Pack: Sendable {
        var id: PackID
        var tags: [ODRFSCore.Tag]
        /// Indexes into ``ResourceTree/files``, in scan order.
        var files: [Int]
    }

    var packs: [Pack]
    /// Human-readable warnings about the spec: patterns that match nothing, tags without files.
    var warnings: [String]

    init(tree: ResourceTree, spec: TagSpec) {
        var matched = Array(repeating: [Bool](), count: spec.rules.count)
        for (r, rule) in spec.rules.enumerated() { matched[r] = Array(repeating: false, count: rule.patterns.count) }
        var byID: [PackID: Pack] = [.base: Pack(id: .base, tags: [], files: [])]
        for (index, file) in tree.files.enumerated() {
            var tags: [ODRFSCore.Tag] = []
            for (r, rule) in spec.rules.enumerated() {
                var tagged = false
                // Every pattern is tried (not just until one hits) so that unused ones can be reported.
                for (p, pattern) in rule.patterns.enumerated() where pattern.matchesSelfOrAncestor(file.components) {
                    matched[r][p] = true
                    tagged = true
                }
                if tagged { tags.append(rule.tag) }
            }
            let id = PackID(tags: tags)
            byID[id, default: Pack(id: id, tags: tags.sorted(), files: [])].files.append(index)
        }
        var warnings: [String] = []
        for (r, rule) in spec.rules.enumerated() {
            for (p, pattern) in rule.patterns.enumerated() where !matched[r][p] {
                // A pattern naming only empty directories or symlinks is used, even though it tags no file.
                if tree.allPaths.contains(where: { pattern.matches($0) }) { continue }
                warnings.append("tag '\(rule.tag)': pattern '\(pattern)' matches nothing")
            }
            if !byID.values.contains(where: { $0.tags.contains(rule.tag) }) {
                warnings.append("tag '\(rule.tag)' has no files")
            }
        }
        let base = byID.removeValue(forKey: .base)!
        self.packs = [base] + byID.values.sorted { $0.id < $1.id }
        self.warnings = warnings
    }
}
