extension String {
    /// The components of a "/"-separated path, split on the byte "/", never on the
    /// character: Swift joins a "/" and a combining mark after it into one `Character`, so
    /// `split(separator: "/")` would keep "../\u{0489}x" whole and a ".." component would
    /// pass unseen. With `omittingEmpty`, empty components (leading, trailing or doubled
    /// slashes) are dropped.
    public func slashSeparated(omittingEmpty: Bool = true) -> [Substring] {
        var components: [Substring] = []
        var start = utf8.startIndex
        var index = utf8.startIndex
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                if !omittingEmpty || start != index { components.append(self[start..<index]) }
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        if !omittingEmpty || start != utf8.endIndex { components.append(self[start..<utf8.endIndex]) }
        return components
    }
}
