import Testing
@testable import ODRFSBuild

@Suite struct GlobTests {
    static let cases: [(String, String, Bool)] = [
        ("Italy/**", "Italy/Rome.txt", true),
        ("Italy/**", "Italy/images/a.png", true),
        ("Italy/**", "Italyx/a", false),
        ("Italy/**", "Iceland/a", false),
        ("**/*.png", "a.png", true),
        ("**/*.png", "x/y/z/a.png", true),
        ("**/*.png", "x/y/a.png.txt", false),
        ("a/**/b", "a/b", true),
        ("a/**/b", "a/x/y/b", true),
        ("a/**/b", "a/x/y/c", false),
        ("**", "anything/at/all", true),
        ("*.json", "italy.json", true),
        ("*.json", "x/italy.json", false),
        ("*", ".hidden", true),
        ("?.txt", "a.txt", true),
        ("?.txt", "ab.txt", false),
        ("?.txt", "é.txt", true),
        ("[abc].txt", "b.txt", true),
        ("[abc].txt", "d.txt", false),
        ("[a-c]x", "cx", true),
        ("[a-c]x", "dx", false),
        ("[!a-c]x", "dx", true),
        ("[!a-c]x", "ax", false),
        ("[^a]x", "bx", true),
        ("[]]x", "]x", true),
        ("[a-]x", "-x", true),
        ("\\*.txt", "*.txt", true),
        ("\\*.txt", "a.txt", false),
        ("a\\?", "a?", true),
        ("a\\?", "ab", false),
        ("[\\]]", "]", true),
        ("*a*b*c", "xxaxxbxxc", true),
        ("*a*b*c", "xxaxxcxxb", false),
        ("Café */*.txt", "Café Roma/menu.txt", true),
        ("./x", "x", true),
        ("a//b", "a/b", true),
        ("Level?/**/*.png", "Level2/maps/big/m.png", true),
        // Names are compared by their scalars: a precomposed é is not e + combining accent.
        ("Caf\u{E9}/**", "Cafe\u{301}/menu.txt", false),
        ("Caf\u{E9}/**", "Caf\u{E9}/menu.txt", true),
        ("Caf?/x", "Cafe\u{301}/x", false),
    ]

    @Test(arguments: cases)
    func matching(_ pattern: String, _ path: String, _ expected: Bool) throws {
        #expect(try Glob(pattern).matches(path) == expected)
    }

    @Test func directoryPatternCoversEverythingBeneath() throws {
        let glob = try Glob("Shared/Forest")
        #expect(glob.matchesSelfOrAncestor(["Shared", "Forest", "deep", "tree.png"]))
        #expect(glob.matchesSelfOrAncestor(["Shared", "Forest"]))
        #expect(!glob.matchesSelfOrAncestor(["Shared", "Forestry", "a"]))
        #expect(try Glob("Shar*").matchesSelfOrAncestor(["Shared", "x"]))
    }

    /// `matchesSelfOrAncestor` runs in one pass; it must agree with its definition, "the
    /// pattern matches the path or one of its ancestors", on every pattern and path.
    @Test func oneCoveringPassAgreesWithMatchingEveryAncestor() throws {
        let segments = ["a", "b", "ab", "*", "?", "**", "[ab]", "a*", "*b"]
        let names = ["a", "b", "ab", "ba", "abc"]
        var rng = SystemRandomNumberGenerator()
        var checked = 0
        for _ in 0..<3_000 {
            let pattern = (0..<Int.random(in: 1...4, using: &rng)).map { _ in segments.randomElement(using: &rng)! }
            let path = (0..<Int.random(in: 1...5, using: &rng)).map { _ in names.randomElement(using: &rng)! }
            let glob = try Glob(pattern.joined(separator: "/"))
            let byDefinition = (1...path.count).contains { glob.matches(Array(path.prefix($0))) }
            #expect(glob.matchesSelfOrAncestor(path) == byDefinition, "\(pattern) against \(path)")
            checked += byDefinition ? 1 : 0
        }
        #expect(checked > 100, "the random cases include matches")
    }

    @Test(arguments: ["", "/abs/**", "a/../b", "..", "a[", "a\\", "[b-a]", "a/\0", "."])
    func rejectsBadPatterns(_ pattern: String) {
        #expect(throws: Glob.SyntaxError.self) { try Glob(pattern) }
    }
}
