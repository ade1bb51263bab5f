import Foundation
import ODRFSCore
import Testing
@testable import ODRFSBuild

#if canImport(Glibc)
import Glibc
#endif

/// Builds into an existing dist dir publish a new revision next to the old ones (issue 13):
/// objects accumulate, `manifest.json` is the switch point, `--keep` prunes.
@Suite struct DistRevisionTests {
    static func manifest(_ tree: TestTree, _ relative: String = "dist/manifest.json") throws -> Manifest {
        try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: tree.path + "/" + relative)))
    }

    /// Every object the manifest names, as dist-relative paths.
    static func objects(_ manifest: Manifest) -> Set<String> {
        Set(manifest.packs.map(\.file) + [manifest.index.file])
    }

    /// The packs and indexes in the dist dir.
    static func objectsOnDisk(_ tree: TestTree) throws -> Set<String> {
        var found: Set<String> = []
        for directory in ["packs", "index"] {
            for name in try tree.entries("dist/" + directory) { found.insert(directory + "/" + name) }
        }
        return found
    }

    static func build(_ tree: TestTree, keep: Int = BundleBuilder.defaultKeep) throws -> BuildReport {
        var builder = tree.builder("src")
        builder.keep = keep
        return try builder.build(into: tree.path + "/dist")
    }

    @Test func aSecondBuildPublishesRevisionTwoAndKeepsTheOldObjects() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        let first = try Self.build(tree)
        #expect(first.reusedPacks == 0)
        let one = try Self.manifest(tree)
        let oneBytes = try Data(contentsOf: URL(fileURLWithPath: tree.path + "/dist/manifest.json"))
        try tree.write("src/Italy/Rome.txt", "Rome, rebuilt\n")
        let second = try Self.build(tree)
        let two = try Self.manifest(tree)
        #expect(second.revision == 2 && two.revision == 2)
        // Only Italy changed: every other pack is the same object, not rewritten.
        let italyOld = try #require(one.packs.first { $0.id == PackID("Italy") })
        let italyNew = try #require(two.packs.first { $0.id == PackID("Italy") })
        #expect(italyOld.file != italyNew.file)
        #expect(second.reusedPacks == one.packs.count - 1)
        #expect(two.index.file != one.index.file)
        // Both revisions are complete in the dist dir, and each is recorded.
        #expect(try Self.objectsOnDisk(tree) == Self.objects(one).union(Self.objects(two)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: tree.path + "/dist/manifests/1.json")) == oneBytes)
        #expect(try Self.manifest(tree, "dist/manifests/2.json") == two)
        #expect(second.keptRevisions == [1, 2] && second.removedObjects == 0)
        for pack in one.packs + two.packs {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: tree.path + "/dist/" + pack.file))
            #expect(ContentHash.of(bytes) == pack.sha256, "\(pack.file)")
        }
        #expect(try tree.entries("dist") == ["index", "manifest.json", "manifests", "packs"])
    }

    @Test func keepRemovesOnlyObjectsThatNoKeptRevisionNames() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        var manifests: [Manifest] = []
        for version in 1...4 {
            try tree.write("src/Italy/Rome.txt", "Rome \(version)\n")
            let report = try Self.build(tree)
            manifests.append(try Self.manifest(tree))
            #expect(report.revision == Int64(version))
        }
        // Default --keep 3: revision 1's own objects are gone, 2–4 complete; shared packs stay.
        let kept = manifests[1...].reduce(into: Set<String>()) { $0.formUnion(Self.objects($1)) }
        #expect(try Self.objectsOnDisk(tree) == kept)
        #expect(!Self.objects(manifests[0]).subtracting(kept).isEmpty)
        #expect(try tree.entries("dist/manifests") == ["2.json", "3.json", "4.json"])
        // An unknown file in packs/ is not the build's to remove.
        try tree.write("dist/packs/README", "mine")
        try tree.write("src/Italy/Rome.txt", "Rome 5\n")
        let report = try Self.build(tree, keep: 1)
        let five = try Self.manifest(tree)
        #expect(report.keptRevisions == [5])
        #expect(report.removedObjects == Self.objects(manifests[1]).union(Self.objects(manifests[2]))
            .union(Self.objects(manifests[3])).subtracting(Self.objects(five)).count)
        #expect(report.removedBytes > .zero)
        #expect(try Self.objectsOnDisk(tree) == Self.objects(five).union(["packs/README"]))
        #expect(try tree.entries("dist/manifests") == ["5.json"])
        // The pack unchanged since revision 1 survived every pruning.
        let iceland = try #require(manifests[0].packs.first { $0.id == PackID("Iceland") })
        #expect(five.packs.contains { $0.file == iceland.file })
    }

    @Test func aDistDirWithoutRecordsKeepsItsCurrentRevisionsObjects() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        _ = try Self.build(tree)
        let one = try Self.manifest(tree)
        // As an older odrfs wrote it: no manifests/ directory.
        try FileManager.default.removeItem(atPath: tree.path + "/dist/manifests")
        try tree.write("src/Italy/Rome.txt", "changed\n")
        let report = try Self.build(tree, keep: 2)
        #expect(report.revision == 2 && report.keptRevisions == [1, 2])
        #expect(try Self.objects(one).isSubset(of: Self.objectsOnDisk(tree)))
        #expect(try tree.entries("dist/manifests") == ["1.json", "2.json"])
    }

    @Test func whatAKilledBuildLeftIsRemovedAndTheRevisionIsComplete() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        _ = try Self.build(tree)
        let one = try Self.manifest(tree)
        // A build killed after writing some objects: temporaries, and an object no manifest names.
        try tree.write("dist/packs/.odrfs-tmp-3.tar", "partial")
        try tree.write("dist/.odrfs-tmp-manifest", "{")
        let orphan = "packs/" + String(repeating: "ab", count: 32) + ".tar"
        try tree.write("dist/" + orphan, "orphan")
        #expect(try Self.manifest(tree) == one)
        try tree.write("src/Italy/Rome.txt", "changed\n")
        _ = try Self.build(tree)
        #expect(try tree.entries("dist") == ["index", "manifest.json", "manifests", "packs"])
        let onDisk = try Self.objectsOnDisk(tree)
        #expect(!onDisk.contains(orphan) && !onDisk.contains("packs/.odrfs-tmp-3.tar"))
        #expect(onDisk == Self.objects(one).union(Self.objects(try Self.manifest(tree))))
    }

    @Test func aFirstBuildKilledBeforeItsManifestCanBeBuiltOver() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        try tree.write("dist/packs/.odrfs-tmp-0.tar", "partial")
        try tree.mkdir("dist/index")
        try tree.mkdir("dist/manifests")
        #expect(try Self.build(tree).revision == 1)
    }

    @Test func aBuildRunningOnTheDistDirLocksOthersOut() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        _ = try Self.build(tree)
        let before = try tree.snapshot("dist")
        let held = open(tree.path + "/dist", O_RDONLY | O_DIRECTORY)
        defer { close(held) }
        #expect(flock(held, LOCK_EX | LOCK_NB) == 0)
        let error = #expect(throws: BuildError.self) { try Self.build(tree) }
        #expect(error?.description.contains("another odrfs build") == true, "\(String(describing: error))")
        #expect(try tree.snapshot("dist") == before)
    }

    @Test func signedRebuildsRecordAndPublishMatchingSignatures() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        let key = SigningKey()
        var builder = tree.builder("src")
        builder.signingKey = key
        _ = try builder.build(into: tree.path + "/dist")
        try tree.write("src/Italy/Rome.txt", "changed\n")
        _ = try builder.build(into: tree.path + "/dist")
        let trust = ManifestTrust(trustedKeys: [key.publicKey])
        for (manifest, signature) in [("dist/manifest.json", "dist/manifest.json.sig"), ("dist/manifests/1.json", "dist/manifests/1.json.sig"),
                                      ("dist/manifests/2.json", "dist/manifests/2.json.sig")] {
            let data = try Data(contentsOf: URL(fileURLWithPath: tree.path + "/" + manifest))
            let sig = try Data(contentsOf: URL(fileURLWithPath: tree.path + "/" + signature))
            #expect(throws: Never.self, "\(manifest)") { try trust.verify(manifest: data, signature: sig, now: Date(), seen: [:]) }
        }
        #expect(try Self.manifest(tree).revision == 2)
    }

    @Test func aSymlinkedObjectDirectoryIsRefusedNotPrunedThrough() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        _ = try Self.build(tree)
        let elsewhere = "packs-elsewhere"
        try FileManager.default.moveItem(atPath: tree.path + "/dist/packs", toPath: tree.path + "/" + elsewhere)
        try tree.symlink("dist/packs", to: "../" + elsewhere)
        let before = try tree.entries(elsewhere)
        let error = #expect(throws: BuildError.self) { try Self.build(tree, keep: 1) }
        #expect(error?.kind == .outputNotReplaceable)
        #expect(try tree.entries(elsewhere) == before)
    }

    @Test func keepMustKeepTheNewRevision() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        #expect(throws: BuildError.self) { try Self.build(tree, keep: 0) }
        #expect(try tree.entries() == ["src"])
    }
}
