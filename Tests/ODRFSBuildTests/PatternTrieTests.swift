import ODRFSCore
import TestSupport
import Testing
@testable import ODRFSBuild

/// The trie must give exactly the plain glob matcher's results: for random specs over a
/// small alphabet (so that patterns and paths collide often), every path's covering
/// patterns through the trie equal those found by testing every pattern, and whole plans
/// equal the plan of the old every-file-against-every-pattern planner.
@Suite struct PatternTrieTests {
    /// Names that collide: prefixes of each other, a dot file, and "é" spelled composed
    /// (NFC) and decomposed (NFD) — equal as Swift Strings, different as bytes.
    static let names = ["a", "b", "ab", "abc", ".h", "x.png", "y.json", "\u{E9}", "e\u{301}", "d00042", "d00420"]
    /// Pattern segments: the names, and every wildcard form.
    static let segments = names + ["*", "?", "**", "a*", "*b", "?b", "[a-b]", "[!a]", "[^x]*", "\\*", "*.png", "[\u{E9}]",
                                   "d0004?", "d*2", "e\u{301}*"]

    static func randomPattern(_ random: inout SplitMix) -> Glob {
        while true {
            let count = Int.random(in: 1...4, using: &random)
            let text = (0..<count).map { _ in segments.randomElement(using: &random)! }.joined(separator: "/")
            if let glob = try? Glob(text) { return glob }
        }
    }

    static func randomPath(_ random: inout SplitMix) -> [Substring] {
        let count = Int.random(in: 1...5, using: &random)
        let path = (0..<count).map { _ in names.randomElement(using: &random)! }.joined(separator: "/")
        return path.split(separator: "/")
    }

    static func randomSpec(_ random: inout SplitMix, tags: Int) -> TagSpec {
        let rules = (0..<tags).map { number in
            TagSpec.Rule(tag: ODRFSCore.Tag("T\(number)"),
                         patterns: (0..<Int.random(in: 1...3, using: &random)).map { _ in randomPattern(&random) })
        }
        return TagSpec(rules: rules, initialInstall: [], prefetch: [], preservation: [:])
    }

    @Test func literalPrefixesStopAtTheFirstWildcard() throws {
        #expect(try Glob("d00042/**").literalPrefix == ["d00042"])
        #expect(try Glob("Levels/1/*.png").literalPrefix == ["Levels", "1"])
        #expect(try Glob("a/./b").literalPrefix == ["a", "b"])
        #expect(try Glob("\\*/x").literalPrefix == ["*", "x"])   // an escaped star is a literal
        #expect(try Glob("**/a").literalPrefix == [])
        #expect(try Glob("*.json").literalPrefix == [])
        #expect(try Glob("[a]/b").literalPrefix == [])
        #expect(try Glob("a?/b").literalPrefix == [])
    }

    @Test func candidatesNarrowToPatternsThatCanMatch() throws {
        let spec = TagSpec(rules: [
            TagSpec.Rule(tag: ODRFSCore.Tag("A"), patterns: [try Glob("d1/**"), try Glob("d1/x/y")]),
            TagSpec.Rule(tag: ODRFSCore.Tag("B"), patterns: [try Glob("d2/**")]),
            TagSpec.Rule(tag: ODRFSCore.Tag("C"), patterns: [try Glob("**/*.png")]),
        ], initialInstall: [], prefetch: [], preservation: [:])
        let trie = PatternTrie(spec: spec)
        let path: [Substring] = ["d1", "x", "y"]
        #expect(trie.candidates(for: path) == [.init(rule: 2, pattern: 0), .init(rule: 0, pattern: 0), .init(rule: 0, pattern: 1)])
        #expect(trie.candidates(for: ["d2", "a"] as [Substring]) == [.init(rule: 2, pattern: 0), .init(rule: 1, pattern: 0)])
        #expect(trie.candidates(for: ["d3"] as [Substring]) == [.init(rule: 2, pattern: 0)])
    }

    @Test(arguments: 0..<8)
    func trieGivesExactlyThePlainMatchersResults(seed: UInt64) {
        var random = SplitMix(seed: 0x7219_0000 + seed)
        let spec = Self.randomSpec(&random, tags: 40)
        let trie = PatternTrie(spec: spec)
        var covered = 0
        for _ in 0..<2_000 {
            let path = Self.randomPath(&random)
            var plainCovering: [PatternTrie.Reference] = [], plainExact: [PatternTrie.Reference] = []
            for (r, rule) in spec.rules.enumerated() {
                for (p, pattern) in rule.patterns.enumerated() {
                    if pattern.matchesSelfOrAncestor(path) { plainCovering.append(.init(rule: r, pattern: p)) }
                    if pattern.matches(path) { plainExact.append(.init(rule: r, pattern: p)) }
                }
            }
            let candidates = trie.candidates(for: path)
            let trieCovering = candidates.filter { spec.rules[$0.rule].patterns[$0.pattern].matchesSelfOrAncestor(path) }
            let trieExact = candidates.filter { spec.rules[$0.rule].patterns[$0.pattern].matches(path) }
            func sorted(_ references: [PatternTrie.Reference]) -> [PatternTrie.Reference] {
                references.sorted { ($0.rule, $0.pattern) < ($1.rule, $1.pattern) }
            }
            #expect(sorted(trieCovering) == plainCovering, "\(path.joined(separator: "/"))")
            #expect(sorted(trieExact) == plainExact, "\(path.joined(separator: "/"))")
            #expect(Set(candidates.map { "\($0.rule)/\($0.pattern)" }).count == candidates.count, "a pattern found twice")
            covered += plainCovering.count
        }
        // The generator must produce matches for the comparison to mean anything.
        #expect(covered > 500, "only \(covered) matches")
    }

    @Test(arguments: 0..<4)
    func plansEqualTheEveryPatternPlanner(seed: UInt64) throws {
        var random = SplitMix(seed: 0x9A11_0000 + seed)
        let spec = Self.randomSpec(&random, tags: 30)
        var seen: Set<String> = []
        var files: [ScannedFile] = []
        var allPaths: [String] = []
        for _ in 0..<600 {
            let components = Self.randomPath(&random)
            let path = components.joined(separator: "/")
            // A path cannot be both a file and a directory; keep leaves only.
            guard !seen.contains(path), !seen.contains(where: { $0.hasPrefix(path + "/") || path.hasPrefix($0 + "/") }) else { continue }
            seen.insert(path)
            files.append(ScannedFile(path: path, size: 0, permissions: 0o644,
                                     modificationTime: Timestamp(seconds: 0, nanoseconds: 0)))
        }
        for path in seen {
            var prefix = ""
            for component in path.split(separator: "/").dropLast() {
                prefix = prefix.isEmpty ? String(component) : prefix + "/" + component
                allPaths.append(prefix)
            }
            allPaths.append(path)
        }
        // An empty directory, which some patterns name exactly.
        allPaths.append("ab/abc")
        let tree = ResourceTree(root: .directory("", permissions: 0o755, modificationTime: Timestamp(seconds: 0, nanoseconds: 0)),
                                files: files, allPaths: Array(Set(allPaths)).sorted())
        let plan = PackPlan(tree: tree, spec: spec)
        let reference = Self.referencePlan(tree: tree, spec: spec)
        #expect(plan.packs.map(\.id) == reference.packs.map(\.id))
        #expect(plan.packs.map(\.tags) == reference.packs.map(\.tags))
        #expect(plan.packs.map(\.files) == reference.packs.map(\.files))
        #expect(plan.warnings == reference.warnings)
        #expect(plan.packs.count > 5, "the random spec tagged too little to compare")
    }

    /// The planner before the trie: every file against every pattern.
    static func referencePlan(tree: ResourceTree, spec: TagSpec) -> (packs: [PackPlan.Pack], warnings: [String]) {
        var matched = spec.rules.map { Array(repeating: false, count: $0.patterns.count) }
        var byID: [PackID: PackPlan.Pack] = [.base: PackPlan.Pack(id: .base, tags: [], variant: .none, files: [])]
        for (index, file) in tree.files.enumerated() {
            var tags: [ODRFSCore.Tag] = []
            for (r, rule) in spec.rules.enumerated() {
                var tagged = false
                for (p, pattern) in rule.patterns.enumerated() where pattern.matchesSelfOrAncestor(file.components) {
                    matched[r][p] = true
                    tagged = true
                }
                if tagged { tags.append(rule.tag) }
            }
            let id = PackID(tags: tags)
            byID[id, default: PackPlan.Pack(id: id, tags: tags.sorted(), variant: .none, files: [])].files.append(index)
        }
        var warnings: [String] = []
        for (r, rule) in spec.rules.enumerated() {
            for (p, pattern) in rule.patterns.enumerated() where !matched[r][p] {
                if tree.allPaths.contains(where: { pattern.matches($0) }) { continue }
                warnings.append("tag '\(rule.tag)': pattern '\(pattern)' matches nothing")
            }
            if !byID.values.contains(where: { $0.tags.contains(rule.tag) }) {
                warnings.append("tag '\(rule.tag)' has no files")
            }
        }
        let base = byID.removeValue(forKey: .base)!
        return ([base] + byID.values.sorted { $0.id < $1.id }, warnings)
    }
}
