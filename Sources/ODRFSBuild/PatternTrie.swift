/// The spec's patterns indexed by their literal leading path components, so that a path is
/// tested only against the patterns that can match it.
///
/// A pattern such as `d00042/**` or `Levels/1/*.png` starts with segments that contain no
/// wildcard (`d00042`; `Levels`, `1`). Such a segment matches exactly one path component,
/// byte for byte, and nothing before it can absorb components, so the pattern can match a
/// path (or cover it, as an ancestor) only if the path starts with those components. The
/// trie stores each pattern at the node of its literal prefix; ``candidates(for:)`` walks
/// the path's components down the trie and collects the patterns met on the way — those
/// at the root (patterns that start with a wildcard, like `**/*.png`) always. With one
/// tag per directory, a file meets one or two patterns instead of all of them, which makes
/// planning linear in the number of files instead of files × patterns.
///
/// The trie only narrows: every candidate is still tested with the exact ``Glob`` match, so
/// results are the plain matcher's by construction. Children are keyed by `String`, whose
/// equality is canonical equivalence rather than byte equality: two spellings of one name
/// (NFC and NFD) share a node and both become candidates, and the byte-exact test keeps
/// only the right one. That can add a candidate, never lose one.
struct PatternTrie: Sendable {
    /// A pattern of the spec: the rule (tag) it belongs to and its place in that rule.
    struct Reference: Sendable, Equatable {
        var rule: Int
        var pattern: Int
    }

    private struct Node: Sendable {
        var references: [Reference] = []
        var children: [String: Int] = [:]
    }

    /// Node 0 is the root; nodes refer to their children by index, so the trie is one array.
    private var nodes: [Node] = [Node()]

    init(spec: TagSpec) {
        for (r, rule) in spec.rules.enumerated() {
            for (p, pattern) in rule.patterns.enumerated() {
                insert(Reference(rule: r, pattern: p), prefix: pattern.literalPrefix)
            }
        }
    }

    private mutating func insert(_ reference: Reference, prefix: [String]) {
        var node = 0
        for component in prefix {
            if let child = nodes[node].children[component] {
                node = child
            } else {
                nodes.append(Node())
                nodes[node].children[component] = nodes.count - 1
                node = nodes.count - 1
            }
        }
        nodes[node].references.append(reference)
    }

    /// Every pattern that may match `components` or one of its ancestors (a superset of the
    /// ones that do), in trie order: patterns with shorter literal prefixes first.
    func candidates<S: StringProtocol>(for components: [S]) -> [Reference] {
        var found = nodes[0].references
        var node = 0
        for component in components {
            guard let child = nodes[node].children[String(component)] else { break }
            node = child
            found.append(contentsOf: nodes[node].references)
        }
        return found
    }
}
