import Testing
@testable import ODRFSCore

/// A mounted index must not hold a symlink that leads out of the mount (issue 12, defect 8):
/// targets are resolved from the link's directory, through the bundle's other links.
@Suite struct FileIndexSymlinkTests {
    typealias Node = FileIndexWriter.Node

    static func index(_ children: [Node]) throws -> FileIndex {
        try FileIndex(bytes: FileIndexWriter(packCount: 1).encode(root: .directory("", children: children)))
    }

    static func expectUnsafe(_ children: [Node], entry: String) {
        let error = #expect(throws: FileIndexError.self) { try index(children) }
        #expect(error?.kind == .unsafeSymlink, "\(String(describing: error))")
        #expect(error?.entry == entry)
    }

    @Test func chainThroughAnUpLinkEscapes() {
        // ln -s .. d/s; ln -s d/s/d/s/d/s/../../../etc/passwd x
        Self.expectUnsafe([.directory("d", children: [.symlink("s", target: "..")]),
                           .symlink("x", target: "d/s/d/s/d/s/../../../etc/passwd")], entry: "x")
    }

    @Test func plainEscapesAndAbsoluteTargets() {
        Self.expectUnsafe([.symlink("up", target: "..")], entry: "up")
        Self.expectUnsafe([.directory("a", children: [.symlink("up", target: "../../x")])], entry: "a/up")
        Self.expectUnsafe([.symlink("etc", target: "/etc")], entry: "etc")
        Self.expectUnsafe([.symlink("m", target: "missing/../../x")], entry: "m")
        // The mount's virtual top-level directory is a real directory to the kernel.
        Self.expectUnsafe([.symlink("l", target: ".odrfs"), .symlink("x", target: "l/../../etc")], entry: "x")
    }

    @Test func chainsLongerThanTheKernelFollowsAreRefused() {
        var links: [Node] = (0..<45).map { .symlink("l\($0)", target: "l\($0 + 1)") }
        links.append(.file("l45", size: 1, pack: .base, dataOffset: 0))
        let error = #expect(throws: FileIndexError.self) { try Self.index(links) }
        #expect(error?.kind == .unsafeSymlink)
    }

    @Test func targetsInsideAreAccepted() throws {
        let index = try Self.index([
            .file("a.txt", size: 1, pack: .base, dataOffset: 0),
            .directory("deep", children: [.directory("e", children: [.file("f.txt", size: 1, pack: .base, dataOffset: 1)])]),
            .symlink("s", target: "deep/e"),
            .symlink("x", target: "s/../../a.txt"),        // "s/.." is "deep"
            .symlink("y", target: "./deep//e/./f.txt"),
            .symlink("dangling", target: "nothing/here"),
            .symlink("loop1", target: "loop2"),
            .symlink("loop2", target: "loop1/x"),
            .symlink("file-as-dir", target: "a.txt/../.."),   // ENOTDIR in the kernel
            .symlink("dot", target: "."),
        ])
        #expect(index.symlinkTarget(of: try #require(index.lookup(path: "x"))) == "s/../../a.txt")
    }
}

extension FileIndexSymlinkTests {
    @Test func overlongTargetsAreRefused() {
        Self.expectUnsafe([.symlink("long", target: String(repeating: "a/", count: 2048))], entry: "long")
    }
}
