import Foundation
import TestSupport
import Testing
@testable import ODRFSCore

@Suite struct FileIndexTests {
    typealias Node = FileIndexWriter.Node

    static func sample() -> Node {
        .directory("", permissions: 0o755, children: [
            .file("zeta.txt", size: 10, pack: PackNumber(1), dataOffset: 512, permissions: 0o600,
                  modificationTime: Timestamp(seconds: 1_700_000_000, nanoseconds: 123_456_789)),
            .directory("Italy", children: [
                .file("Café Roma.txt", size: 3, pack: PackNumber(0), dataOffset: 2048),
                .symlink("latest", target: "Café Roma.txt"),
                .directory("empty"),
            ]),
            .file("a b.txt", size: 0, pack: PackNumber(0), dataOffset: 1536),
        ])
    }

    @Test func roundTrip() throws {
        let index = try FileIndex(bytes: FileIndexWriter(packCount: 2).encode(root: Self.sample()))
        #expect(index.entryCount == 7)
        #expect(index.packCount == 2)
        // Breadth-first, children sorted by bytes: "Italy" < "a b.txt" < "zeta.txt".
        #expect(index.children(of: .root) == 1..<4)
        #expect((1..<4).map { index.name(of: EntryNumber($0)) } == ["Italy", "a b.txt", "zeta.txt"])
        #expect(index.children(of: EntryNumber(1)) == 4..<7)
        #expect(index.path(of: EntryNumber(4)) == "Italy/Café Roma.txt")
        #expect(index.name(of: .root) == "")
        #expect(index.path(of: .root) == "")

        let root = try #require(index.entry(.root))
        #expect(root.kind == .directory && root.subdirectoryCount == 1 && root.parent == .root)
        let zetaNumber = try #require(index.lookup(path: "zeta.txt"))
        let zeta = try #require(index.entry(zetaNumber))
        #expect(zeta == IndexEntry(kind: .regularFile, permissions: 0o600, size: 10,
                                   modificationTime: Timestamp(seconds: 1_700_000_000, nanoseconds: 123_456_789),
                                   pack: PackNumber(1), dataOffset: 512, parent: .root, subdirectoryCount: 0))
        let link = try #require(index.lookup(path: "Italy/latest"))
        #expect(index.symlinkTarget(of: link) == "Café Roma.txt")
        #expect(index.entry(link)?.size == UInt64("Café Roma.txt".utf8.count))
        #expect(index.entry(link)?.pack == nil)
        #expect(index.symlinkTarget(of: .root) == nil)
        let empty = try #require(index.lookup(path: "/Italy/empty/"))
        #expect(index.children(of: empty).isEmpty)
        #expect(index.children(of: link).isEmpty)
        #expect(index.lookup(path: "Italy/missing") == nil)
        #expect(index.lookup(path: "zeta.txt/x") == nil)
        #expect(index.lookup(path: "") == .root)
        #expect(index.entry(EntryNumber(7)) == nil)
        #expect(index.withNameBytes(of: EntryNumber(2)) { Array($0) } == Array("a b.txt".utf8))
    }

    @Test func writerIsDeterministicAndSortsChildren() throws {
        var shuffled = Self.sample()
        shuffled.children.reverse()
        let writer = FileIndexWriter(packCount: 2)
        #expect(try writer.encode(root: shuffled) == writer.encode(root: Self.sample()))
    }

    @Test func writerRejectsBadTrees() {
        let writer = FileIndexWriter(packCount: 1)
        #expect(throws: FileIndexError.self) {
            try writer.encode(root: .directory("", children: [.directory("a"), .file("a", size: 0, pack: .base, dataOffset: 0)]))
        }
        #expect(throws: FileIndexError.self) {
            try writer.encode(root: .directory("", children: [.file("x", size: 0, pack: PackNumber(1), dataOffset: 0)]))
        }
        #expect(throws: FileIndexError.self) { try writer.encode(root: .directory("", children: [.directory("a/b")])) }
        #expect(throws: FileIndexError.self) { try writer.encode(root: .directory("", children: [.directory("..")])) }
    }

    @Test func mapsFromDisk() throws {
        let path = NSTemporaryDirectory() + "odrfs-index-\(UUID().uuidString).odrx"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(FileIndexWriter(packCount: 2).encode(root: Self.sample())).write(to: URL(fileURLWithPath: path))
        let index = try FileIndex(contentsOf: path)
        let cafe = try #require(index.lookup(path: "Italy/Café Roma.txt"))
        #expect(index.path(of: cafe) == "Italy/Café Roma.txt")
        #expect(throws: FileIndexError.self) { try FileIndex(contentsOf: path + ".missing") }
    }

    /// Validation reads every record and name; once validated, those pages leave the
    /// process's resident set (issue 28: 67 of a 1,000,000-file mount's 159 MiB) and come
    /// back as requests touch them, with the same bytes.
    @Test func validatedPagesLeaveTheResidentSet() throws {
        let path = NSTemporaryDirectory() + "odrfs-index-\(UUID().uuidString).odrx"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let files = (0..<20_000).map { Node.file(String(format: "file-%05d", $0), size: 1, pack: PackNumber(0), dataOffset: 0) }
        try Data(FileIndexWriter(packCount: 1).encode(root: .directory("", children: files))).write(to: URL(fileURLWithPath: path))
        let index = try FileIndex(contentsOf: path)
        let validated = try #require(Self.residentKiB(of: path))
        #expect(validated >= 1000, "20,000 records of 64 bytes were read: \(validated) KiB")
        index.releaseResidentPages()
        #expect(try #require(Self.residentKiB(of: path)) <= 8)
        #expect(index.name(of: EntryNumber(12_346)) == "file-12345")
        // How much a fault maps again is the kernel's business (here a 2 MiB folio held this
        // whole index); the bytes are the file's.
        #expect(index.lookup(path: "file-19999") == EntryNumber(20_000))
    }

    /// A walk touches every record and name once; serving entries releases the pages every
    /// `threshold` entries, so after 20,000 entries at 5,000 a release was the last thing done
    /// (issue 28: a `find` of 1,000,000 files left 107 MiB of index resident in the daemon).
    @Test func servingEntriesReleasesTheirPages() throws {
        let path = NSTemporaryDirectory() + "odrfs-index-\(UUID().uuidString).odrx"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let files = (0..<19_999).map { Node.file(String(format: "file-%05d", $0), size: 1, pack: PackNumber(0), dataOffset: 0) }
        try Data(FileIndexWriter(packCount: 1).encode(root: .directory("", children: files))).write(to: URL(fileURLWithPath: path))
        let index = try FileIndex(contentsOf: path, residency: ResidentPageBudget(threshold: 5_000))
        var releases = 0
        for n in 0..<UInt32(index.entryCount) {
            #expect(index.entry(EntryNumber(n)) != nil && !index.name(of: EntryNumber(n)).isEmpty || n == 0)
            if n == 10_000 {
                #expect(try #require(Self.residentKiB(of: path)) >= 100, "a walk's pages are resident until the next release")
            }
            if index.noteEntriesServed(1) { releases += 1 }
        }
        #expect(releases == 4)
        #expect(try #require(Self.residentKiB(of: path)) <= 8)
        #expect(index.lookup(path: "file-19998") == EntryNumber(19_999))
        #expect(!index.noteEntriesServed(0))
    }

    /// The `Rss:` of this process's mapping of `path`, from /proc/self/smaps.
    static func residentKiB(of path: String) -> Int? {
        // Read to the end: /proc files report a size of 0.
        guard let data = FileHandle(forReadingAtPath: "/proc/self/smaps")?.readDataToEndOfFile() else { return nil }
        let smaps = String(decoding: data, as: UTF8.self)
        var inMapping = false
        for line in smaps.split(separator: "\n") {
            if let first = line.first, first.isHexDigit, line.contains("-") {
                inMapping = line.hasSuffix(path)
            } else if inMapping, line.hasPrefix("Rss:") {
                return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            }
        }
        return nil
    }

    /// A random tree of about `budget` entries in 3 packs (directories, files and symlinks
    /// within it), with the kind of every path it holds.
    static func randomTree(seed: UInt64, budget total: Int) -> (root: Node, paths: [String: EntryKind]) {
        var rng = SplitMix(seed: seed)
        var paths: [String: EntryKind] = [:]
        var budget = total
        func makeChildren(prefix: String, depth: Int) -> [Node] {
            var names = Set<String>()
            var children: [Node] = []
            for _ in 0..<(Int(rng.next() % 40) + 1) where budget > 0 {
                let name = String((0..<Int(rng.next() % 8 + 1)).map { _ in "abcXYZé_ .-0"[Int(rng.next() % 12)] })
                guard name != "." && name != ".." && names.insert(name).inserted else { continue }
                budget -= 1
                let path = prefix + "/" + name
                if depth < 5 && rng.next() % 4 == 0 {
                    paths[path] = .directory
                    children.append(.directory(name, children: makeChildren(prefix: path, depth: depth + 1)))
                } else if rng.next() % 10 == 0 {
                    paths[path] = .symlink
                    children.append(.symlink(name, target: "t/" + name))
                } else {
                    paths[path] = .regularFile
                    children.append(.file(name, size: rng.next() % 100_000, pack: PackNumber(UInt32(rng.next() % 3)),
                                          dataOffset: rng.next() % 1_000_000))
                }
            }
            return children
        }
        var root = Node.directory("")
        var top = 0
        while budget > 0 {
            let name = "top\(top)"
            top += 1
            budget -= 1
            paths[name] = .directory
            root.children.append(.directory(name, children: makeChildren(prefix: name, depth: 1)))
        }
        return (root, paths)
    }

    /// A random tree of about 10,000 entries, checked against the paths it was built from.
    @Test func largeRandomTree() throws {
        let (root, paths) = Self.randomTree(seed: 42, budget: 10_000)
        let index = try FileIndex(bytes: FileIndexWriter(packCount: 3).encode(root: root))
        #expect(index.entryCount == paths.count + 1)
        #expect(index.entryCount > 9_000)
        for (path, kind) in paths {
            let n = try #require(index.lookup(path: path), "\(path)")
            #expect(index.entry(n)?.kind == kind)
            #expect(index.path(of: n) == path)
        }
        for raw in 0..<UInt32(index.entryCount) {
            let n = EntryNumber(raw)
            let entry = try #require(index.entry(n))
            let kids = index.children(of: n)
            guard entry.kind == .directory else {
                #expect(kids.isEmpty)
                continue
            }
            let names = kids.map { index.withNameBytes(of: EntryNumber($0)) { Array($0) } }
            #expect(names == names.sorted { $0.lexicographicallyPrecedes($1) })
            #expect(kids.allSatisfy { index.entry(EntryNumber($0))?.parent == n })
            #expect(entry.subdirectoryCount == UInt32(kids.filter { index.entry(EntryNumber($0))?.kind == .directory }.count))
        }
    }
}


extension String {
    subscript(_ i: Int) -> Character { self[index(startIndex, offsetBy: i)] }
}
