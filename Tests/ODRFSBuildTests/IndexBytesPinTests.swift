import Foundation
import ODRFSCore
import Testing
@testable import ODRFSBuild

/// The file index of a fixed tree, pinned by its SHA-256: built by `odrfs build` before the
/// encoder was rewritten to write in parts (issue 28, session 17), and by every release
/// since. A different hash is a format change, which the same input ⇒ byte-identical
/// output contract does not allow by accident.
@Suite("Index bytes pinned")
struct IndexBytesPinTests {
    /// What the session-16 builder wrote for this tree (`odrfs build res -o out --compress none`).
    static let pinned = "c75a34c2506af2eb810e3c2005792ceca6904eec33dd71ec4b0bee9fdb7a37c2"

    /// Directories (one empty), small files in two tags, a 300,000-byte file (a chunk
    /// table), two symlinks; every mode and time fixed.
    static func makeTree(in tree: TestTree) throws {
        try tree.write("res/odr.yaml", "tags:\n  A: [\"a/**\"]\n  E: [\"e/**\"]\n")
        let big = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 / 251) }
        try tree.mkdir("res/a/b/c")
        try Data(big).write(to: URL(fileURLWithPath: tree.path + "/res/a/big.bin"))
        try tree.write("res/a/b/c/small.txt", "small\n")
        try tree.symlink("res/a/b/link", to: "../big.bin")
        for n in 1...20 { try tree.write("res/e/f\(n)", "file \(n)\n") }
        try tree.mkdir("res/empty")
        try tree.symlink("res/top-link", to: "a/b/c/small.txt")
        // Deepest first, the root last: setting a child's time does not touch its directory's.
        let root = tree.path + "/res"
        let paths = try FileManager.default.subpathsOfDirectory(atPath: root).sorted { $0.count > $1.count }
        for path in paths.map({ root + "/" + $0 }) + [root] {
            var info = stat()
            try #require(lstat(path, &info) == 0)
            if (info.st_mode & S_IFMT) == S_IFLNK {
                // Linux makes every symlink 0777; a filesystem that does not would change the index.
                try #require(info.st_mode & 0o7777 == 0o777, "symlink \(path) has mode \(String(info.st_mode & 0o7777, radix: 8))")
            } else {
                try #require(chmod(path, (info.st_mode & S_IFMT) == S_IFDIR ? 0o755 : 0o644) == 0)
            }
            var times = [timespec(tv_sec: 1_700_000_000, tv_nsec: 0), timespec(tv_sec: 1_700_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW) == 0)
        }
    }

    @Test("a fixed tree's index has the bytes it always had")
    func indexBytesArePinned() throws {
        let tree = try TestTree()
        try Self.makeTree(in: tree)
        _ = try tree.builder("res").build(into: tree.path + "/out")
        let names = try tree.entries("out/index")
        #expect(names == [Self.pinned + ".odrx"])
        // The file written, not only the name computed from the parts in memory.
        let written = try Data(contentsOf: URL(fileURLWithPath: tree.path + "/out/index/" + Self.pinned + ".odrx"))
        #expect(ContentHash.of(written).hex == Self.pinned)
    }
}
