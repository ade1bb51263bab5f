/// A path pattern from the tag spec, matched against paths relative to the resource root.
///
/// - `**` as a whole segment matches any number of segments, including none
///   (`**/*.png`, `Levels/**`, `a/**/b`).
/// - `*` matches any run of characters within a segment, `?` exactly one; both match a leading
///   dot too (resource trees rarely hide files on purpose).
/// - `[abc]`, `[a-z]`, `[!x]` / `[^x]` match one character from (or not from) a class.
/// - A backslash makes the next character literal (`\*`, `\[`).
///
/// Characters are Unicode scalars, compared exactly (no normalization, no case folding).
/// A pattern that matches a directory also covers everything beneath it; see
/// ``matchesSelfOrAncestor(_:)``.
public struct Glob: Sendable, Equatable, CustomStringConvertible {
    /// The pattern as written.
    public let pattern: String
    /// Internal (not private) so that ``PatternTrie`` can index patterns by their literal prefix.
    let segments: [Segment]
    /// `segments` followed by `**`: matches a path exactly when the pattern matches the
    /// path or one of its ancestors, in one pass (see ``matchesSelfOrAncestor(_:)``).
    private let coveringSegments: [Segment]

    enum Segment: Sendable, Equatable {
        case anyPath                 // **
        /// A segment without wildcards, compared by its UTF-8 bytes (the common case:
        /// `Levels`, `textures`); far cheaper than token matching.
        case literal(String)
        case tokens([Token])
    }

    enum Token: Sendable, Equatable {
        case literal(Unicode.Scalar)
        case any                     // ?
        case star                    // *
        case set(ranges: [ClosedRange<Unicode.Scalar>], negated: Bool)
    }

    /// Why a pattern cannot be compiled.
    public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        public let pattern: String
        public let problem: String
        public var description: String { "pattern '\(pattern)' \(problem)" }
    }

    public init(_ pattern: String) throws(SyntaxError) {
        func fail(_ problem: String) -> SyntaxError { SyntaxError(pattern: pattern, problem: problem) }
        guard !pattern.isEmpty else { throw fail("is empty") }
        guard !pattern.hasPrefix("/") else { throw fail("is absolute; patterns are relative to the resource root") }
        guard !pattern.unicodeScalars.contains("\0") else { throw fail("contains a NUL character") }
        var segments: [Segment] = []
        for raw in pattern.slashSeparated() {
            if raw == "**" {
                if segments.last != .anyPath { segments.append(.anyPath) }
                continue
            }
            if raw == ".." { throw fail("contains a '..' component; patterns cannot leave the resource root") }
            if raw == "." { continue }
            let tokens = try Self.compile(Substring(raw), fail: fail)
            let literal = tokens.compactMap { token -> Unicode.Scalar? in
                if case .literal(let scalar) = token { return scalar } else { return nil }
            }
            if literal.count == tokens.count {
                var text = ""
                text.unicodeScalars.append(contentsOf: literal)
                segments.append(.literal(text))
            } else {
                segments.append(.tokens(tokens))
            }
        }
        guard !segments.isEmpty else { throw fail("matches nothing but the root") }
        self.pattern = pattern
        self.segments = segments
        self.coveringSegments = segments.last == .anyPath ? segments : segments + [.anyPath]
    }

    public var description: String { pattern }

    /// Whether the pattern matches exactly this path ("a/b/c.txt" split into components).
    public func matches<S: StringProtocol>(_ components: [S]) -> Bool {
        Self.match(segments, components)
    }

    public func matches(_ path: String) -> Bool {
        matches(path.slashSeparated())
    }

    /// Whether the pattern matches this path or one of its ancestor directories, i.e. whether
    /// a file at this path is covered by the pattern. `P` covers a path exactly when `P/**`
    /// matches it, since `**` also matches no segment at all.
    public func matchesSelfOrAncestor<S: StringProtocol>(_ components: [S]) -> Bool {
        Self.match(coveringSegments, components)
    }

    private static func match<S: StringProtocol>(_ segments: [Segment], _ components: [S]) -> Bool {
        match(segments, components) { segment, component in
            switch segment {
            case .anyPath:
                return true
            case .literal(let text):
                // Bytes, not String ==, which would equate canonically equivalent names.
                return component.utf8.elementsEqual(text.utf8)
            case .tokens(let tokens):
                return match(tokens, component.unicodeScalars) { token, scalar in
                    switch token {
                    case .literal(let expected): return scalar == expected
                    case .any, .star: return true
                    case let .set(ranges, negated): return ranges.contains { $0.contains(scalar) } != negated
                    }
                } isStar: { $0 == .star }
            }
        } isStar: { $0 == .anyPath }
    }

    /// Wildcard matching with one kind of star, by the classic greedy algorithm with
    /// backtracking to the last star: linear in practice, never exponential. Works on
    /// any collections' indices, so no path or name is copied into an array to match it.
    private static func match<P: Collection, T: Collection>(_ pattern: P, _ text: T,
                                                          matchesOne: (P.Element, T.Element) -> Bool,
                                                          isStar: (P.Element) -> Bool) -> Bool {
        var p = pattern.startIndex, t = text.startIndex
        var starP: P.Index?, starT = text.startIndex
        while t != text.endIndex {
            if p != pattern.endIndex, isStar(pattern[p]) {
                starP = p
                starT = t
                p = pattern.index(after: p)
            } else if p != pattern.endIndex, matchesOne(pattern[p], text[t]) {
                p = pattern.index(after: p)
                t = text.index(after: t)
            } else if let star = starP {
                p = pattern.index(after: star)
                starT = text.index(after: starT)
                t = starT
            } else {
                return false
            }
        }
        while p != pattern.endIndex, isStar(pattern[p]) { p = pattern.index(after: p) }
        return p == pattern.endIndex
    }

    private static func compile(_ segment: Substring, fail: (String) -> SyntaxError) throws(SyntaxError) -> [Token] {
        var tokens: [Token] = []
        var scalars = segment.unicodeScalars[...]
        while let scalar = scalars.popFirst() {
            switch scalar {
            case "\\":
                guard let escaped = scalars.popFirst() else { throw fail("ends with a lone backslash") }
                tokens.append(.literal(escaped))
            case "?": tokens.append(.any)
            case "*": if tokens.last != .star { tokens.append(.star) }
            case "[": tokens.append(try compileSet(&scalars, fail: fail))
            default: tokens.append(.literal(scalar))
            }
        }
        return tokens
    }

    /// Parses a class after its '['; a ']' right after the opening (or after '!'/'^') is literal.
    private static func compileSet(_ scalars: inout Substring.UnicodeScalarView.SubSequence,
                                   fail: (String) -> SyntaxError) throws(SyntaxError) -> Token {
        var negated = false
        if let first = scalars.first, first == "!" || first == "^" {
            negated = true
            scalars.removeFirst()
        }
        var ranges: [ClosedRange<Unicode.Scalar>] = []
        var isFirst = true
        while true {
            guard var low = scalars.popFirst() else { throw fail("has an unterminated '[' class") }
            if low == "]" && !isFirst { break }
            isFirst = false
            if low == "\\" {
                guard let escaped = scalars.popFirst() else { throw fail("has an unterminated '[' class") }
                low = escaped
            }
            var high = low
            if scalars.first == "-", scalars.dropFirst().first.map({ $0 != "]" }) ?? false {
                scalars.removeFirst()
                high = scalars.removeFirst()
                if high == "\\" {
                    guard let escaped = scalars.popFirst() else { throw fail("has an unterminated '[' class") }
                    high = escaped
                }
                guard low <= high else { throw fail("has a reversed range \(low)-\(high)") }
            }
            ranges.append(low...high)
        }
        return .set(ranges: ranges, negated: negated)
    }
}
