import Foundation
import Testing
@testable import ODRFSCore

/// The trust decision of `odrfs mount --trust-key`, case by case.
@Suite struct ManifestTrustTests {
    let key = SigningKey()
    let otherKey = SigningKey()
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func manifestBytes(revision: Int64 = 5, expires: Int64? = nil) -> Data {
        var manifest = ManifestTests.valid()
        manifest.revision = revision
        manifest.expires = expires
        return manifest.encoded()
    }

    func signature(_ data: Data, by signer: SigningKey) throws -> Data {
        Data(try signer.sign(data).fileContents.utf8)
    }

    func expect(_ kind: ManifestTrustError.Kind, containing text: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("expected \(kind)")
        } catch let error as ManifestTrustError {
            #expect(error.kind == kind)
            #expect(error.description.contains(text), "\(error)")
        } catch {
            Issue.record("expected \(kind), got \(error)")
        }
    }

    @Test func goodSignatureIsAccepted() throws {
        let data = manifestBytes()
        let verified = try ManifestTrust(trustedKeys: [key.publicKey])
            .verify(manifest: data, signature: try signature(data, by: key), now: now, seen: [:])
        #expect(verified.manifest.revision == 5)
        #expect(verified.signer == key.publicKey)
    }

    @Test func alteredManifestIsRefused() throws {
        let data = manifestBytes()
        let sig = try signature(data, by: key)
        var altered = data
        altered.append(UInt8(ascii: " "))   // still valid JSON, not the signed bytes
        expect(.badSignature, containing: "does not match") {
            _ = try ManifestTrust(trustedKeys: [key.publicKey]).verify(manifest: altered, signature: sig, now: now, seen: [:])
        }
        // A signature claiming the trusted key id but made by another key.
        let forged = ManifestSignature(keyID: key.publicKey.id, signature: try otherKey.sign(data).signature)
        expect(.badSignature, containing: key.publicKey.id.hex) {
            _ = try ManifestTrust(trustedKeys: [key.publicKey]).verify(manifest: data, signature: Data(forged.fileContents.utf8),
                                                                        now: now, seen: [:])
        }
    }

    /// The two halves a mount uses to read the index's name between them: authenticate
    /// refuses what verify refused for the signature, verify still refuses a rollback.
    @Test func authenticateThenVerify() throws {
        let trust = ManifestTrust(trustedKeys: [key.publicKey])
        let data = manifestBytes(revision: 5)
        let authenticated = try trust.authenticate(manifest: data, signature: try signature(data, by: key))
        #expect(authenticated.signer == key.publicKey)
        #expect(ManifestReader.indexReference(in: authenticated.data) == ManifestTests.valid().index)
        #expect(try trust.verify(authenticated, now: now, seen: [:]).manifest.revision == 5)
        expect(.rollback, containing: "rollback") {
            _ = try trust.verify(authenticated, now: now, seen: [key.publicKey.id: SeenRevision(revision: 6, date: now)])
        }
        var altered = data
        altered.append(UInt8(ascii: " "))
        expect(.badSignature, containing: "does not match") {
            _ = try trust.authenticate(manifest: altered, signature: try signature(data, by: key))
        }
        expect(.unsigned, containing: "not signed") { _ = try trust.authenticate(manifest: data, signature: nil) }
    }

    @Test func unsignedIsRefused() {
        expect(.unsigned, containing: "not signed") {
            _ = try ManifestTrust(trustedKeys: [key.publicKey]).verify(manifest: manifestBytes(), signature: nil, now: now, seen: [:])
        }
    }

    @Test func untrustedKeyIsRefused() throws {
        let data = manifestBytes()
        let sig = try signature(data, by: otherKey)
        expect(.untrustedKey, containing: "signed by key \(otherKey.publicKey.id), which is not trusted") {
            _ = try ManifestTrust(trustedKeys: [key.publicKey]).verify(manifest: data, signature: sig, now: now, seen: [:])
        }
    }

    @Test func eitherOfTwoTrustedKeysIsAccepted() throws {
        let data = manifestBytes()
        let trust = ManifestTrust(trustedKeys: [key.publicKey, otherKey.publicKey])
        #expect(try trust.verify(manifest: data, signature: try signature(data, by: key), now: now, seen: [:]).signer == key.publicKey)
        #expect(try trust.verify(manifest: data, signature: try signature(data, by: otherKey), now: now, seen: [:]).signer == otherKey.publicKey)
    }

    @Test func rollbackIsRefusedAcrossRotatedKeys() throws {
        let data = manifestBytes(revision: 41)
        let seenDate = Date(timeIntervalSince1970: 1_700_000_000)
        let seen = [key.publicKey.id: SeenRevision(revision: 42, date: seenDate)]
        // Signed by the new key, but the old (still trusted) key already vouched for 42.
        expect(.rollback, containing: "rollback to revision 41 refused: revision 42 was seen on 2023-11-14T22:13:20Z") {
            _ = try ManifestTrust(trustedKeys: [key.publicKey, otherKey.publicKey])
                .verify(manifest: data, signature: try signature(data, by: otherKey), now: now, seen: seen)
        }
        // The same revision again (a remount) and a newer one pass.
        let same = manifestBytes(revision: 42)
        _ = try ManifestTrust(trustedKeys: [key.publicKey]).verify(manifest: same, signature: try signature(same, by: key), now: now, seen: seen)
        // Revisions seen with keys no longer trusted do not count.
        _ = try ManifestTrust(trustedKeys: [otherKey.publicKey]).verify(manifest: data, signature: try signature(data, by: otherKey), now: now, seen: seen)
    }

    @Test func expiredIsRefused() throws {
        let expires: Int64 = 1_800_000_000
        let data = manifestBytes(expires: expires)
        let sig = try signature(data, by: key)
        let trust = ManifestTrust(trustedKeys: [key.publicKey])
        _ = try trust.verify(manifest: data, signature: sig, now: Date(timeIntervalSince1970: 1_799_999_999), seen: [:])
        expect(.expired, containing: "manifest expired at 2027-01-15T08:00:00Z") {
            _ = try trust.verify(manifest: data, signature: sig, now: Date(timeIntervalSince1970: 1_800_000_000), seen: [:])
        }
    }

    @Test func signedButInvalidManifestIsRefused() throws {
        var manifest = ManifestTests.valid()
        manifest.revision = 0
        let data = manifest.encoded()
        expect(.invalidManifest, containing: "revision 0 is outside") {
            _ = try ManifestTrust(trustedKeys: [key.publicKey]).verify(manifest: data, signature: try signature(data, by: key), now: now, seen: [:])
        }
    }

    @Test(arguments: [
        "", "\n", "odrfs-ed25519-signature", "odrfs-ed25519-signature 0011223344556677",
        "odrfs-ed25519-signature 00112233445566 AAAA", "odrfs-ed25519-signature 001122334455667g AAAA",
        "odrfs-ed25519-signature 0011223344556677 AAAA",   // 3 bytes, not 64
        "odrfs-ed25519-signature  0011223344556677 x", "odrfs-ed25519-public AAAA",
        "odrfs-ed25519-signature 0011223344556677 " + String(repeating: "A", count: 2000),
    ])
    func malformedSignatureFileIsRefused(_ text: String) {
        expect(.malformedSignature, containing: "malformed") {
            _ = try ManifestTrust(trustedKeys: [key.publicKey]).verify(manifest: manifestBytes(), signature: Data(text.utf8), now: now, seen: [:])
        }
    }

    @Test func keyFilesRoundTrip() throws {
        let reread = try SigningKey(fileContents: Array(key.fileContents.utf8))
        #expect(reread.publicKey == key.publicKey)
        #expect(try TrustKey(fileContents: Array(key.publicKey.fileContents.utf8)) == key.publicKey)
        #expect(key.publicKey.fileContents.hasPrefix("odrfs-ed25519-public "))
        #expect(throws: KeyFormatError.self) { try TrustKey(fileContents: Array(key.fileContents.utf8)) }
        #expect(throws: KeyFormatError.self) { try SigningKey(fileContents: Array(key.publicKey.fileContents.utf8)) }
        // Deterministic signatures keep signed builds byte-identical.
        let data = manifestBytes()
        #expect(try key.sign(data) == key.sign(data))
        let json = try JSONEncoder().encode([key.publicKey])
        #expect(try JSONDecoder().decode([TrustKey].self, from: json) == [key.publicKey])
    }

    @Test func revisionAndExpiryBounds() throws {
        var manifest = ManifestTests.valid()
        manifest.revision = 1 << 53
        manifest.expires = 253_402_300_799
        #expect(try Manifest.decode(manifest.encoded()).revision == 1 << 53)
        ManifestTests.expectError(.invalidRevision, containing: "revision") { $0.revision = (1 << 53) + 1 }
        ManifestTests.expectError(.invalidRevision, containing: "revision") { $0.revision = -1 }
        ManifestTests.expectError(.invalidExpiry, containing: "expires") { $0.expires = 253_402_300_800 }
        ManifestTests.expectError(.invalidExpiry, containing: "expires") { $0.expires = -1 }
        // A manifest from before revisions existed decodes as revision 1.
        var object = try #require(try JSONSerialization.jsonObject(with: ManifestTests.valid().encoded()) as? [String: Any])
        #expect(object.removeValue(forKey: "revision") != nil)
        let old = try JSONSerialization.data(withJSONObject: object)
        #expect(try Manifest.decode(old).revision == 1)
        #expect(try Manifest.decode(old).expires == nil)
    }
}
