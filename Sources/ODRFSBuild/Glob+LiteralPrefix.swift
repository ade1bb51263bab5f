extension Glob {
    /// The pattern's leading segments that contain no wildcard: a path the pattern matches
    /// (or covers) starts with exactly these components. Empty when the pattern starts with
    /// `*`, `?`, a class or `**`.
    var literalPrefix: [String] {
        var prefix: [String] = []
        for segment in segments {
            guard case .literal(let text) = segment else { break }
            prefix.append(text)
        }
        return prefix
    }
}
