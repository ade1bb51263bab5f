import Foundation
import Testing
@testable import ODRFSBuild
import ODRFSCore

/// `odrfs build` with revisions, `--sign-key` and `--expires`.
@Suite struct SignedBuildTests {
    static func manifest(_ tree: TestTree, _ dist: String) throws -> (Data, Manifest) {
        let data = try Data(contentsOf: URL(fileURLWithPath: tree.path + "/" + dist + "/manifest.json"))
        return (data, try Manifest.decode(data))
    }

    @Test func revisionStartsAtOneAndCountsBuildsIntoTheSameDistDir() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        for expected: Int64 in 1...3 {
            let report = try tree.builder("src").build(into: tree.path + "/dist")
            #expect(report.revision == expected)
            #expect(try Self.manifest(tree, "dist").1.revision == expected)
        }
        #expect(try Self.manifest(tree, "dist").1.expires == nil)
    }

    @Test func aManifestWithoutRevisionIsFollowedByTwo() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        _ = try tree.builder("src").build(into: tree.path + "/dist")
        let path = tree.path + "/dist/manifest.json"
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        object["revision"] = nil
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        #expect(try tree.builder("src").build(into: tree.path + "/dist").revision == 2)
    }

    @Test func aPreviousRevisionAtTheLimitFailsTheBuildAndKeepsTheDistDir() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        _ = try tree.builder("src").build(into: tree.path + "/dist")
        let path = tree.path + "/dist/manifest.json"
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        object["revision"] = Int64.max
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: path))
        let before = try tree.snapshot("dist")
        #expect(throws: BuildError.self) { try tree.builder("src").build(into: tree.path + "/dist") }
        #expect(try tree.snapshot("dist") == before)
    }

    @Test func signedBuildPublishesAVerifiableDeterministicSignature() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        let key = SigningKey()
        var builder = tree.builder("src")
        builder.signingKey = key
        let report = try builder.build(into: tree.path + "/one")
        #expect(report.signer == key.publicKey.id)
        _ = try builder.build(into: tree.path + "/two")
        #expect(try tree.snapshot("one") == tree.snapshot("two"))
        #expect(try tree.entries("one") == ["index", "manifest.json", "manifest.json.sig", "manifests", "packs"])
        let (data, _) = try Self.manifest(tree, "one")
        let signature = try Data(contentsOf: URL(fileURLWithPath: tree.path + "/one/manifest.json.sig"))
        let verified = try ManifestTrust(trustedKeys: [key.publicKey]).verify(manifest: data, signature: signature, now: Date(), seen: [:])
        #expect(verified.manifest.revision == 1)
        // An unsigned rebuild leaves no stale signature behind.
        _ = try tree.builder("src").build(into: tree.path + "/one")
        #expect(try tree.entries("one") == ["index", "manifest.json", "manifests", "packs"])
    }

    @Test func expiresIsBuildTimePlusTheDuration() throws {
        let tree = try TestTree()
        try tree.copyExample("travel-guide", to: "src")
        let duration = try #require(ExpiryDuration(parsing: "30d"))
        var builder = tree.builder("src")
        let before = Int64(Date().timeIntervalSince1970)
        builder.expires = duration.expiry(after: Date())
        _ = try builder.build(into: tree.path + "/dist")
        let expires = try #require(try Self.manifest(tree, "dist").1.expires)
        #expect(expires >= before + 30 * 86_400 && expires <= before + 30 * 86_400 + 5)
    }

    @Test func durationsParse() {
        #expect(ExpiryDuration(parsing: "45s")?.seconds == 45)
        #expect(ExpiryDuration(parsing: "2m")?.seconds == 120)
        #expect(ExpiryDuration(parsing: "3h")?.seconds == 10_800)
        #expect(ExpiryDuration(parsing: "30d")?.seconds == 2_592_000)
        for bad in ["", "d", "0d", "-1d", "1w", "1.5d", "1 d", "+1d", "1000000000000d", "１d"] {
            #expect(ExpiryDuration(parsing: bad) == nil, "\(bad)")
        }
        // Past year 9999: refused rather than wrapped.
        #expect(ExpiryDuration(parsing: "999999999999d")?.expiry(after: Date()) == nil)
        #expect(ExpiryDuration(parsing: "1s")?.expiry(after: Date(timeIntervalSince1970: 100.7)) == 101)
    }
}
