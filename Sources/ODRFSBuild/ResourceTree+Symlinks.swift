import ODRFSCore

extension ResourceTree {
    /// Refuses a symlink that leaves the resource root, by the rule the mount applies to the
    /// index (``FileIndex`` resolves every target from the link's directory, through the other
    /// links of the tree): counting `..` in one target misses `x -> d/s/../../etc/passwd` with
    /// `d/s -> ..`, and a build must not produce a bundle every mount would refuse.
    /// Runs before any pack is written: the tree is encoded with placeholder pack positions.
    func checkSymlinks(resourceRoot: String) throws(BuildError) {
        guard Self.hasSymlink(root) else { return }
        let probe: [UInt8]
        do {
            probe = try FileIndexWriter(packCount: 1).encode(root: Self.placeholderPacks(root))
        } catch {
            return   // the real encoding reports tree problems with the build's own message
        }
        do {
            _ = try FileIndex(bytes: probe)
        } catch where error.kind == .unsafeSymlink {
            let shown = (resourceRoot.hasSuffix("/") ? resourceRoot : resourceRoot + "/") + (error.entry ?? "")
            throw BuildError(.symlinkOutsideRoot, path: shown,
                             "symlink '\(shown)' leads outside the resource directory (resolved from its own directory, through the other symlinks in the tree): \(error.message)")
        } catch {
            return
        }
    }

    private static func hasSymlink(_ node: FileIndexWriter.Node) -> Bool {
        node.kind == .symlink || node.children.contains { hasSymlink($0) }
    }

    private static func placeholderPacks(_ node: FileIndexWriter.Node) -> FileIndexWriter.Node {
        var node = node
        if node.kind == .regularFile {
            node.pack = .base
            node.dataOffset = 0
        }
        node.children = node.children.map { placeholderPacks($0) }
        return node
    }
}
