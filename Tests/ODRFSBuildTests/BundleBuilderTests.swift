import Foundation
import ODRFSCore
import Testing
@testable import ODRFSBuild

@Suite struct BundleBuilderTests {
    /// Loads a built dist dir back through the Core readers.
    static func load(_ dist: String) throws -> (Manifest, FileIndex) {
        let manifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: dist + "/" + Manifest.fileName)))
        return (manifest, try FileIndex(contentsOf: dist + "/" + manifest.index.file))
    }

    /// The bytes of `path` read from its pack at the index's offset.
    static func packedBytes(_ path: String, dist: String, manifest: Manifest, index: FileIndex) throws -> [UInt8] {
        let number = try #require(index.lookup(path: path))
        let entry = try #require(index.entry(number))
        let packNumber = try #require(entry.pack)
        let pack = try Data(contentsOf: URL(fileURLWithPath: dist + "/" + manifest.pack(packNumber).file))
        return Array(pack[Int(entry.dataOffset)..<Int(entry.dataOffset + entry.size)])
    }

    @Test func sharedFilesLandOnlyInTheSharedPack() throws {
        let tree = try TestTree()
        try tree.copyExample("game", to: "game")
        let report = try tree.builder("game").build(into: tree.path + "/dist")
        #expect(report.rows.map(\.id.rawValue) == ["base", "Level1", "Level1+Level2", "Level2", "Level3"])
        #expect(report.warnings.isEmpty, "\(report.warnings)")
        let (manifest, index) = try Self.load(tree.path + "/dist")
        #expect(manifest.bundleVersion == report.bundleVersion)
        for path in ["Shared/Forest/trees.png", "Shared/Forest/forest.json"] {
            let entryNumber = try #require(index.lookup(path: path))
            let number = try #require(index.entry(entryNumber)?.pack)
            #expect(manifest.pack(number).id == PackID("Level1+Level2"), "\(path)")
            #expect(try Self.packedBytes(path, dist: tree.path + "/dist", manifest: manifest, index: index)
                    == Array(Data(contentsOf: URL(fileURLWithPath: tree.path + "/game/" + path))))
        }
        #expect(manifest.packs.map(\.files) == [2, 2, 2, 2, 2])
        #expect(manifest.packs(for: ODRFSCore.Tag("Level1")).map { manifest.pack($0).id.rawValue } == ["Level1", "Level1+Level2"])
        #expect(manifest.prefetch == [ODRFSCore.Tag("Level2"), ODRFSCore.Tag("Level3")])
        #expect(manifest.preservationPriority(of: ODRFSCore.Tag("Level1")) == 0.8)
        // The spec file is not a resource.
        #expect(index.lookup(path: "odr.yaml") == nil)
        #expect(manifest.pack(.base).id == .base && index.lookup(path: "game.json") != nil)
        let table = report.table()
        #expect(table.contains("Level1+Level2  Level1, Level2"))
        #expect(table.contains("total: 5 packs, 10 files"))
    }

    @Test func travelGuideKeepsEveryKindOfEntry() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        try tree.mkdir("src/Japan/Empty Dir")   // git cannot store an empty directory
        let report = try tree.builder("src").build(into: tree.path + "/dist")
        let dist = tree.path + "/dist"
        let (manifest, index) = try Self.load(dist)
        #expect(report.rows.map(\.id.rawValue) == ["base", "Iceland", "Italy", "Japan", "base[locale=en]", "base[locale=it]", "base[locale=ja]"])
        #expect(manifest.variants?.map(\.key.name) == ["locale"])
        #expect(index.lookup(path: "Guide#locale_it/welcome.txt") != nil, "the published index keeps the physical tree")
        #expect(manifest.initialInstall == [ODRFSCore.Tag("Iceland")])
        #expect(manifest.preservationPriority(of: ODRFSCore.Tag("Italy")) == 0.5)
        let empty = try #require(index.lookup(path: "Japan/Empty Dir"))
        #expect(index.entry(empty)?.kind == .directory && index.children(of: empty).isEmpty)
        let link = try #require(index.lookup(path: "Italy/latest.txt"))
        #expect(index.symlinkTarget(of: link) == "Rome.txt")
        let emptyFile = try #require(index.lookup(path: "Italy/empty.txt"))
        #expect(index.entry(emptyFile)?.size == 0)
        #expect(try Self.packedBytes("Italy/Café Roma.txt", dist: dist, manifest: manifest, index: index)
                == Array(Data(contentsOf: URL(fileURLWithPath: tree.path + "/src/Italy/Café Roma.txt"))))
        #expect(try Self.packedBytes("Iceland/Blue Lagoon.txt", dist: dist, manifest: manifest, index: index).count > 0)
        // Content-addressed names.
        for pack in manifest.packs {
            #expect(pack.file == "packs/\(pack.sha256.hex).tar")
            let bytes = try Data(contentsOf: URL(fileURLWithPath: dist + "/" + pack.file))
            #expect(ContentHash.of(bytes) == pack.sha256)
        }
        #expect(try tree.entries("dist") == ["index", "manifest.json", "manifests", "packs"])
    }

    @Test func sameInputGivesByteIdenticalDistDirs() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        _ = try tree.builder("src").build(into: tree.path + "/one")
        _ = try tree.builder("src").build(into: tree.path + "/two")
        let one = try tree.snapshot("one"), two = try tree.snapshot("two")
        #expect(one.count > 5)
        #expect(one == two)
        // Rebuilding over a previous dist dir raises the revision, and changes nothing else:
        // the same input over the same previous revision gives the same bytes again.
        _ = try tree.builder("src").build(into: tree.path + "/one")
        _ = try tree.builder("src").build(into: tree.path + "/two")
        let rebuilt = try tree.snapshot("one")
        #expect(rebuilt == (try tree.snapshot("two")))
        #expect(rebuilt["manifest.json"] != two["manifest.json"])
        // The new revision's manifest, and its record, are all that was added.
        #expect(rebuilt["manifests/2.json"] == rebuilt["manifest.json"])
        #expect(rebuilt.filter { !["manifest.json", "manifests/2.json"].contains($0.key) } == two.filter { $0.key != "manifest.json" })
    }

    @Test func noSpecMeansEverythingInBase() throws {
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        try tree.write("src/b/c.txt", "c")
        let report = try tree.builder("src").build(into: tree.path + "/dist")
        #expect(report.rows.map(\.id) == [.base])
        #expect(report.totalFiles == 2)
        #expect(report.warnings.contains { $0.contains("no odr.yaml") })
    }

    @Test func explicitSpecOutsideTheRoot() throws {
        let tree = try TestTree()
        try tree.write("src/x/a.txt", "a")
        try tree.write("spec.yaml", "tags:\n  X: [\"x/**\", \"nothing/**\"]\n")
        let report = try tree.builder("src", spec: "spec.yaml").build(into: tree.path + "/dist")
        #expect(report.rows.map(\.id.rawValue) == ["base", "X"])
        #expect(report.rows[0].files == 0)
        #expect(report.warnings == ["tag 'X': pattern 'nothing/**' matches nothing"])
    }
}
