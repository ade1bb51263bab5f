import ODRFSCore

/// What the variant directories of a resource tree mean (see ``VariantView``): for each
/// file its logical path (every `#KEY_VALUE` suffix removed) and its variant assignment.
///
/// Made only when the spec declares variants; then every directory name containing `#`
/// must be a well-formed suffix of a declared key and value, no path gives a key two
/// values, no logical path is a file in one variant and a directory (or symlink) in
/// another, and no logical path is written twice for one assignment. Each refusal names
/// the physical path and the rule. Without declared variants no name is interpreted.
struct VariantLayout: Sendable {
    /// Per ``ResourceTree/files`` entry: the logical path's components.
    var logicalComponents: [[Substring]]
    /// Per ``ResourceTree/files`` entry: its variant (``VariantAssignment/none`` outside
    /// every variant directory).
    var assignments: [VariantAssignment]
    /// Logical paths of every entry, for pattern-match warnings.
    var logicalPaths: [String]

    /// The layout of `tree` under `declarations` (not empty).
    init(tree: ResourceTree, declarations: [VariantDeclaration]) throws(BuildError) {
        var walker = Walker(declarations: declarations)
        try walker.walk(tree.root, physical: "", logical: "", assignment: .none, depth: 0)
        logicalComponents = []
        assignments = []
        logicalComponents.reserveCapacity(tree.files.count)
        assignments.reserveCapacity(tree.files.count)
        for file in tree.files {
            // Every scanned file was walked: same tree.
            let (logical, assignment) = walker.files[file.path] ?? (file.path, .none)
            logicalComponents.append(logical.slashSeparated())
            assignments.append(assignment)
        }
        logicalPaths = walker.logicalPaths
    }

    /// One walk of the physical tree.
    private struct Walker {
        let declarations: [VariantDeclaration]
        /// Physical path of each regular file → its logical path and assignment.
        var files: [String: (String, VariantAssignment)] = [:]
        var logicalPaths: [String] = []
        /// Logical path → its kind and, per assignment, the physical path that gave it.
        var seen: [String: (kind: EntryKind, physical: [VariantAssignment: String])] = [:]

        init(declarations: [VariantDeclaration]) {
            self.declarations = declarations
        }

        mutating func walk(_ node: FileIndexWriter.Node, physical: String, logical: String,
                           assignment: VariantAssignment, depth: Int) throws(BuildError) {
            guard depth < BundleLimits.maxVariantTreeDepth else {
                throw refusal(physical, "a bundle with variants nests at most \(BundleLimits.maxVariantTreeDepth) directories deep")
            }
            for child in node.children {
                let childPhysical = physical.isEmpty ? child.name : physical + "/" + child.name
                var name = child.name
                var childAssignment = assignment
                if child.kind == .directory, child.name.utf8.contains(UInt8(ascii: "#")) {
                    let suffix = try parse(child.name, at: childPhysical)
                    guard let declaration = declarations.first(where: { $0.key == suffix.key }) else {
                        throw refusal(childPhysical, "variant key '\(suffix.key)' is not declared under 'variants' (declared: \(declarations.map(\.key.name).joined(separator: ", ")))")
                    }
                    guard declaration.values.contains(suffix.value) else {
                        throw refusal(childPhysical, "'\(suffix.value)' is not a declared value of variant key '\(suffix.key)' (\(declaration.values.map(\.name).joined(separator: ", ")))")
                    }
                    guard let combined = assignment.adding(suffix.key, suffix.value) else {
                        throw refusal(childPhysical, "variant key '\(suffix.key)' appears twice in one path")
                    }
                    name = suffix.logicalName
                    childAssignment = combined
                    if name == "." || name == ".." {
                        throw refusal(childPhysical, "the logical name '\(name)' is not a name a tree may hold")
                    }
                    if physical.isEmpty, name == ResourceScanner.reservedTopLevelName {
                        throw refusal(childPhysical, "the logical name '\(name)' is reserved at the top of a mount for its status directory")
                    }
                }
                let childLogical = logical.isEmpty ? name : logical + "/" + name
                try record(childLogical, kind: child.kind, assignment: childAssignment, physical: childPhysical)
                switch child.kind {
                case .directory:
                    try walk(child, physical: childPhysical, logical: childLogical, assignment: childAssignment, depth: depth + 1)
                case .regularFile:
                    files[childPhysical] = (childLogical, childAssignment)
                case .symlink:
                    break
                }
            }
        }

        private mutating func record(_ logical: String, kind: EntryKind, assignment: VariantAssignment,
                                     physical: String) throws(BuildError) {
            guard var entry = seen[logical] else {
                seen[logical] = (kind, [assignment: physical])
                logicalPaths.append(logical)
                return
            }
            guard entry.kind == kind else {
                let other = entry.physical.values.sorted().first ?? logical
                throw refusal(physical, "logical path '\(logical)' is a \(Self.describe(kind)) here but a \(Self.describe(entry.kind)) at '\(other)'; every variant must have the same kind at one path")
            }
            if let other = entry.physical[assignment] {
                // One directory reached twice is fine (a logical directory merges variants);
                // a file or symlink written twice for one variant is ambiguous.
                guard kind == .directory else {
                    throw refusal(physical, "logical path '\(logical)' in variant '\(assignment)' is also written at '\(other)'")
                }
                return
            }
            entry.physical[assignment] = physical
            seen[logical] = entry
        }

        private func parse(_ name: String, at path: String) throws(BuildError) -> VariantSuffix {
            switch VariantSuffix.parse(name) {
            case .success(let suffix)?: return suffix
            case .failure(let problem)?: throw refusal(path, "not a variant directory name (NAME#KEY_VALUE): \(problem.reason)")
            case nil: throw refusal(path, "not a variant directory name (NAME#KEY_VALUE)")
            }
        }

        private func refusal(_ path: String, _ message: String) -> BuildError {
            BuildError(.invalidVariant, path: path, "'\(path)': \(message)")
        }

        private static func describe(_ kind: EntryKind) -> String {
            switch kind {
            case .directory: "directory"
            case .regularFile: "file"
            case .symlink: "symlink"
            }
        }
    }
}
