/// Checks paths that come from a manifest before they are joined to a dist dir or cache path:
/// a hostile manifest must not be able to name a file outside of it.
public enum SafeRelativePath {
    /// Why `path` is not a safe relative path ("a/b.tar"), or nil when it is.
    public static func problem(with path: String) -> String? {
        if path.isEmpty { return "is empty" }
        if path.hasPrefix("/") { return "is absolute" }
        if path.utf8.contains(0) { return "contains a NUL byte" }
        if path.contains("\\") { return "contains a backslash" }
        for component in path.slashSeparated(omittingEmpty: false) {
            if component.isEmpty { return "has an empty component" }
            // By bytes: "." followed by a combining mark is a different name on disk.
            if component.utf8.elementsEqual("..".utf8) { return "contains a '..' component" }
            if component.utf8.elementsEqual(".".utf8) { return "contains a '.' component" }
        }
        return nil
    }
}
