import Foundation
import ODRFSCore
import Testing
@testable import ODRFSBuild

/// The manifest's bundle identity (issue 23: `odrfs store status` names bundles by it):
/// where a build takes it from, and that it stays across rebuilds.
@Suite struct BundleIdentityBuildTests {
    static func manifest(_ tree: TestTree) throws -> Manifest {
        try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: tree.path + "/dist/manifest.json")))
    }

    @Test func theResourceDirectorysNameIsTheDefaultAndARebuildKeepsTheFirstIdentity() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "My Guide")
        _ = try tree.builder("My Guide").build(into: tree.path + "/dist")
        #expect(try Self.manifest(tree).bundle?.rawValue == "My-Guide")
        var renamed = tree.builder("My Guide")
        renamed.bundleIdentity = BundleIdentity("org.example.guide")
        _ = try renamed.build(into: tree.path + "/dist")
        #expect(try Self.manifest(tree).bundle?.rawValue == "org.example.guide")
        try tree.write("My Guide/Italy/Rome.txt", "Rome, rebuilt\n")
        _ = try tree.builder("My Guide").build(into: tree.path + "/dist")
        let third = try Self.manifest(tree)
        #expect(third.revision == 3 && third.bundle?.rawValue == "org.example.guide", "a rebuild without an identity kept the dist dir's")
    }

    @Test func theTagSpecsBundleKeyIsUsedAndAnInvalidOneRefused() throws {
        let spec = try TagSpec.parse("bundle: com.example.Game\ntags:\n  A: [\"a/**\"]\n", file: "odr.yaml")
        #expect(spec.bundle?.rawValue == "com.example.Game")
        for bad in ["\"../etc\"", "\"com example\"", "\"-x\"", "[a]", "\"\(String(repeating: "a", count: 256))\""] {
            #expect(throws: TagSpecError.self, "bundle: \(bad)") { _ = try TagSpec.parse("bundle: \(bad)\n", file: "odr.yaml") }
        }
    }

    @Test func derivingMakesAValidIdentityFromAnyName() {
        #expect(BundleIdentity(deriving: "..My Game (2026)").rawValue == "My-Game--2026-")
        #expect(BundleIdentity(deriving: "").rawValue == "bundle")
        #expect(BundleIdentity(deriving: "---").rawValue == "bundle")
        #expect(BundleIdentity(deriving: "a" + String(repeating: "é", count: 300)).rawValue.utf8.count == BundleIdentity.maximumBytes)
        for name in ["", "..", "a b", "\u{1B}[31m", "ünï", String(repeating: "x", count: 1000)] {
            #expect(BundleIdentity.problem(with: BundleIdentity(deriving: name).rawValue) == nil)
        }
    }
}
