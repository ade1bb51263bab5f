/// Checks paths that come from a manifest before they are joined to a dist dir or cache path:
/// a hostile manifest must not be able to name a file outside of it.
public enum SafeRelativePath {
    /// Why `path` is not a safe relative path ("a/b.tar"), or nil when it is.
    public static func problem(with path: String) -> String? {
        // One pass over the bytes, nothing allocated: a manifest names one path per pack,
        // 100,000 at issue 28's scale. By bytes throughout, as the kernel reads a path: "."
        // followed by a combining mark is another name on disk, and a "\\" or "/" followed by
        // one is still a backslash or a separator (the checks by Character of releases before
        // issue 28 let "a\\\u{301}b" through).
        var bytes = path.utf8.makeIterator()
        guard var byte = bytes.next() else { return "is empty" }
        if byte == UInt8(ascii: "/") { return "is absolute" }
        var componentLength = 0
        var componentIsDots = true
        var problem: String?
        var hasBackslash = false
        func endComponent() -> String? {
            if componentLength == 0 { return "has an empty component" }
            if componentIsDots, componentLength == 2 { return "contains a '..' component" }
            if componentIsDots, componentLength == 1 { return "contains a '.' component" }
            return nil
        }
        while true {
            switch byte {
            case 0: return "contains a NUL byte"
            case UInt8(ascii: "\\"):
                hasBackslash = true
                componentLength += 1
                componentIsDots = false
            case UInt8(ascii: "/"):
                // A NUL anywhere, then a backslash anywhere, then the first component's
                // problem: the order the checks always had.
                if problem == nil { problem = endComponent() }
                componentLength = 0
                componentIsDots = true
            default:
                componentLength += 1
                if byte != UInt8(ascii: ".") { componentIsDots = false }
            }
            guard let next = bytes.next() else { break }
            byte = next
        }
        if hasBackslash { return "contains a backslash" }
        return problem ?? endComponent()
    }
}
