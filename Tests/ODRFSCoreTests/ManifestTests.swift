import Foundation
import Testing
import TestSupport
@testable import ODRFSCore

@Suite struct ManifestTests {
    static func hash(_ s: String) -> ContentHash { ContentHash.of(Array(s.utf8)) }

    static func pack(_ tags: [String], bytes: Int64) -> PackDescriptor {
        let chunkCount = Int((bytes + 1023) / 1024)
        return PackDescriptor(id: PackID(tags: tags.map(Tag.init)), tags: tags.map(Tag.init), file: "packs/\(hash(tags.description).hex).tar",
                              bytes: ByteCount(bytes), sha256: hash(tags.description),
                              chunks: (0..<chunkCount).map { hash("\(tags)\($0)") }, files: 1)
    }

    /// A valid manifest; tests break one thing at a time.
    static func valid() -> Manifest {
        let packs = [pack([], bytes: 0), pack(["Level1"], bytes: 3000), pack(["Level1", "Level2"], bytes: 1024), pack(["Level2"], bytes: 1)]
        var manifest = Manifest(bundleVersion: hash("x"), chunkSize: ByteCount(1024),
                                index: IndexReference(file: "index/i.odrx", bytes: ByteCount(100), sha256: hash("index"), entries: 5),
                                packs: packs,
                                tags: [TagDescriptor(tag: Tag("Level1"), preservationPriority: 0.5, packs: [PackID("Level1"), PackID("Level1+Level2")]),
                                       TagDescriptor(tag: Tag("Level2"), packs: [PackID("Level1+Level2"), PackID("Level2")])],
                                initialInstall: [Tag("Level1")], prefetch: [Tag("Level2")])
        manifest.bundleVersion = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs)
        return manifest
    }

    /// "e\u{301}" and "\u{e9}" sort as two tags (by bytes) but are one key (Strings compare
    /// canonically): each must list the packs holding either, as when every tag's holders
    /// were compared, before validation matched pack lists in one pass (session 16).
    @Test func canonicallyEqualTagsEachListTheirHolders() throws {
        let accented = Self.pack(["\u{e9}"], bytes: 1)
        func manifest(decomposedLists packs: [PackID]) -> Manifest {
            var manifest = Self.valid()
            manifest.packs.append(accented)
            manifest.tags += [TagDescriptor(tag: Tag("e\u{301}"), packs: packs), TagDescriptor(tag: Tag("\u{e9}"), packs: [accented.id])]
            manifest.bundleVersion = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs)
            return manifest
        }
        let accepted = try Manifest.decode(manifest(decomposedLists: [accented.id]).encoded())
        #expect(accepted.tags.count == 4)
        for wrong in [[], [PackID("Level2")], [accented.id, accented.id]] {
            #expect(throws: ManifestError.self, "accepted \(wrong)") { try Manifest.decode(manifest(decomposedLists: wrong).encoded()) }
        }
    }

    /// Re-signs the bundle version so that only the intended problem is left.
    static func expectError(_ kind: ManifestError.Kind, containing text: String, keepVersion: Bool = false,
                            _ change: (inout Manifest) -> Void) {
        var manifest = valid()
        change(&manifest)
        if !keepVersion {
            manifest.bundleVersion = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs)
        }
        do {
            _ = try Manifest.decode(manifest.encoded())
            Issue.record("expected \(kind)")
        } catch {
            #expect(error.kind == kind)
            #expect(error.description.contains(text), "\(error.description)")
            #expect(error.description.hasPrefix("manifest.json: "))
        }
    }

    @Test func roundTripIsExactAndDeterministic() throws {
        let manifest = Self.valid()
        let data = manifest.encoded()
        let decoded = try Manifest.decode(data)
        #expect(decoded == manifest)
        #expect(decoded.encoded() == data)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"file\" : \"packs/"))   // slashes not escaped
        #expect(text.contains("\"bytes\" : 3000"))      // ByteCount as a plain integer
    }

    @Test func lookups() {
        let manifest = Self.valid()
        #expect(manifest.packNumber(of: PackID("Level1+Level2")) == PackNumber(2))
        #expect(manifest.packNumber(of: PackID("nope")) == nil)
        #expect(manifest.pack(PackNumber(1)).id == PackID("Level1"))
        #expect(manifest.packs(for: Tag("Level2")) == [PackNumber(2), PackNumber(3)])
        #expect(manifest.preservationPriority(of: Tag("Level1")) == 0.5)
    }

    @Test func syntaxErrors() {
        #expect(throws: ManifestError.self) { try Manifest.decode(Data("{not json".utf8)) }
        var json = String(decoding: Self.valid().encoded(), as: UTF8.self)
        json = json.replacingOccurrences(of: "\"bytes\" : 3000", with: "\"bytes\" : \"big\"")
        do {
            _ = try Manifest.decode(Data(json.utf8))
            Issue.record("expected a type error")
        } catch {
            #expect(error.kind == .syntax)
            #expect(error.description.contains("packs[1].bytes"), "\(error)")
        }
        let missing = String(decoding: Self.valid().encoded(), as: UTF8.self).replacingOccurrences(of: "\"chunkSize\"", with: "\"chunkSiz\"")
        #expect(throws: ManifestError(.syntax, "chunkSize is missing")) { try Manifest.decode(Data(missing.utf8)) }
        let badHash = String(decoding: Self.valid().encoded(), as: UTF8.self).replacingOccurrences(of: Self.hash("index").hex, with: "zz")
        #expect(throws: ManifestError.self) { try Manifest.decode(Data(badHash.utf8)) }
    }

    @Test func validationErrors() {
        Self.expectError(.unsupportedFormat, containing: "format 2") { $0.format = 2 }
        Self.expectError(.missingBasePack, containing: "packs[0]") { $0.packs.removeFirst() }
        Self.expectError(.missingBasePack, containing: "no packs") { $0.packs = [] }
        Self.expectError(.duplicatePack, containing: "appears twice") { $0.packs.append($0.packs[3]) }
        Self.expectError(.misplacedPack, containing: "sorted") { $0.packs.swapAt(1, 3) }
        Self.expectError(.unsafePath, containing: "'..'") { $0.packs[1].file = "packs/../../etc/passwd" }
        Self.expectError(.unsafePath, containing: "absolute") { $0.packs[1].file = "/etc/passwd" }
        Self.expectError(.unsafePath, containing: "NUL") { $0.packs[1].file = "packs/a\0b" }
        Self.expectError(.unsafePath, containing: "backslash") { $0.packs[1].file = "packs\\a" }
        Self.expectError(.unsafePath, containing: "empty component") { $0.packs[1].file = "packs//a" }
        Self.expectError(.unsafePath, containing: "index file") { $0.index.file = "../index.odrx" }
        Self.expectError(.chunkCountMismatch, containing: "pack 'Level1' has 2 chunk hashes but 2.9 KiB needs 3") {
            $0.packs[1].chunks.removeLast()
        }
        Self.expectError(.chunkCountMismatch, containing: "needs 0") { $0.packs[0].chunks = [Self.hash("extra")] }
        Self.expectError(.invalidChunkSize, containing: "chunkSize") { $0.chunkSize = ByteCount(0) }
        Self.expectError(.invalidSize, containing: "negative") { $0.packs[3].bytes = ByteCount(-1) }
        Self.expectError(.unknownTag, containing: "initialInstall names tag 'Nope'") { $0.initialInstall = [Tag("Nope")] }
        Self.expectError(.unknownTag, containing: "prefetch names tag 'Nope'") { $0.prefetch.append(Tag("Nope")) }
        Self.expectError(.unknownTag, containing: "'Level2', which is not in tags") { $0.tags.removeLast() }
        Self.expectError(.priorityOutOfRange, containing: "1.5") { $0.tags[0].preservationPriority = 1.5 }
        Self.expectError(.priorityOutOfRange, containing: "-0.1") { $0.tags[0].preservationPriority = -0.1 }
        Self.expectError(.invalidTag, containing: "reserved") {
            $0.tags.insert(TagDescriptor(tag: Tag("base"), packs: []), at: 0)
        }
        Self.expectError(.inconsistent, containing: "does not match its tags") { $0.packs[1].tags = [Tag("Level2")] }
        Self.expectError(.inconsistent, containing: "lists packs") { $0.tags[1].packs = [PackID("Level2")] }
        // Each way a tag's list can differ from its holders, with the holders named.
        let holders = "the packs holding it are [\"Level1+Level2\", \"Level2\"]"
        Self.expectError(.inconsistent, containing: holders) { $0.tags[1].packs = [PackID("Level1+Level2")] }
        Self.expectError(.inconsistent, containing: holders) { $0.tags[1].packs = [PackID("Level2"), PackID("Level1+Level2")] }
        Self.expectError(.inconsistent, containing: holders) { $0.tags[1].packs.append(PackID("Level1")) }
        Self.expectError(.inconsistent, containing: holders) { $0.tags[1].packs = [] }
        Self.expectError(.inconsistent, containing: "tag 'Level1' lists packs") { $0.tags[0].packs.removeFirst() }
        Self.expectError(.inconsistent, containing: "bundleVersion", keepVersion: true) { $0.packs[1].sha256 = Self.hash("other") }
    }
}

/// Sizes and counts beyond ``BundleLimits`` and duplicate hashes (issue 12, defects 2 and 4).
@Suite struct ManifestLimitTests {
    @Test func hugePackSizeIsRejectedNotTrapped() {
        // Used to trap in `bytes + chunkSize - 1`.
        ManifestTests.expectError(.tooLarge, containing: "limit") { $0.packs[1].bytes = ByteCount(.max) }
        ManifestTests.expectError(.tooLarge, containing: "limit") { $0.packs[1].bytes = ByteCount(BundleLimits.maxTotalBytes.value + 1) }
    }

    @Test func hugeChunkSizeIsRejectedNotTrapped() {
        ManifestTests.expectError(.invalidChunkSize, containing: "chunkSize") { $0.chunkSize = ByteCount(.max) }
        ManifestTests.expectError(.invalidChunkSize, containing: "chunkSize") { $0.chunkSize = ByteCount(512) }
        ManifestTests.expectError(.invalidChunkSize, containing: "chunkSize") { $0.chunkSize = BundleLimits.chunkSizeRange.upperBound + ByteCount(1) }
    }

    @Test func totalOfAllPacksIsBounded() {
        // Each pack alone is within the limit; together they are not, so a sum downstream
        // (statvfs, reservations) could overflow. Rejected before the chunk lists are looked at.
        ManifestTests.expectError(.tooLarge, containing: "add up") {
            for n in 1..<$0.packs.count { $0.packs[n].bytes = ByteCount(BundleLimits.maxTotalBytes.value / 2) }
        }
    }

    @Test func indexSizeIsBounded() {
        ManifestTests.expectError(.tooLarge, containing: "index") { $0.index.bytes = BundleLimits.maxIndexBytes + ByteCount(1) }
        ManifestTests.expectError(.tooLarge, containing: "index") { $0.index.entries = Int(UInt32.max) + 1 }
    }

    @Test func totalBytesOfAValidManifest() throws {
        let manifest = try Manifest.decode(ManifestTests.valid().encoded())
        #expect(manifest.totalBytes == ByteCount(0 + 3000 + 1024 + 1))
        var absurd = manifest
        absurd.packs[1].bytes = ByteCount(.max)
        #expect(absurd.totalBytes == ByteCount(.max), "saturates instead of trapping")
    }

    @Test func duplicatePackHashesAreRejected() {
        ManifestTests.expectError(.duplicatePack, containing: "same sha256") { $0.packs[3].sha256 = $0.packs[1].sha256 }
    }

    @Test func packIfPresent() {
        let manifest = ManifestTests.valid()
        #expect(manifest.packIfPresent(PackNumber(3))?.id == PackID("Level2"))
        #expect(manifest.packIfPresent(PackNumber(4)) == nil)
        #expect(manifest.packIfPresent(PackNumber(.max)) == nil)
    }
}

/// The optional `mirrors` list: hostile input, bounded and checked.
struct ManifestMirrorTests {
    func manifest(mirrors: [String]?) -> Data {
        var manifest = SyntheticBundle(packContents: [(.base, [1, 2, 3])]).manifest
        manifest.mirrors = mirrors
        return manifest.encoded()
    }

    @Test func validMirrorsDecodeAndAbsentMeansNone() throws {
        #expect(try Manifest.decode(manifest(mirrors: nil)).mirrors == nil)
        let urls = ["https://mirror.example.org/bundle/", "http://10.0.0.2:8080/"]
        #expect(try Manifest.decode(manifest(mirrors: urls)).mirrors == urls)
        #expect(!String(decoding: manifest(mirrors: nil), as: UTF8.self).contains("mirrors"), "an old manifest's bytes are unchanged")
    }

    @Test(arguments: [
        ["ftp://mirror/"], ["file:///etc/"], ["http://mirror/ with space"], ["http://mirror/\u{1B}[31m"],
        ["https://" + String(repeating: "a", count: 3000)], Array(repeating: "https://m/", count: 17),
    ])
    func hostileMirrorsAreRefused(_ mirrors: [String]) {
        #expect(throws: ManifestError.self) { _ = try Manifest.decode(manifest(mirrors: mirrors)) }
    }
}

/// The optional `bundle` identity: hostile input, bounded and checked; absent in old manifests.
struct ManifestBundleIdentityTests {
    func manifest(bundle: String?) -> Data {
        var manifest = SyntheticBundle(packContents: [(.base, [1, 2, 3])]).manifest
        manifest.bundle = bundle.map { BundleIdentity(deriving: "x").withRawValue($0) }
        return manifest.encoded()
    }

    @Test func aValidIdentityDecodesAndAbsentMeansNone() throws {
        #expect(try Manifest.decode(manifest(bundle: nil)).bundle == nil)
        #expect(try Manifest.decode(manifest(bundle: "com.example.Game")).bundle?.rawValue == "com.example.Game")
        #expect(!String(decoding: manifest(bundle: nil), as: UTF8.self).contains("\"bundle\""), "an old manifest's bytes are unchanged")
    }

    @Test(arguments: ["", "../x", "a/b", "a b", "\u{1B}[31m", ".hidden", "-flag", "ünï", String(repeating: "a", count: 256)])
    func hostileIdentitiesAreRefused(_ bundle: String) {
        #expect(throws: ManifestError.self) { _ = try Manifest.decode(manifest(bundle: bundle)) }
    }
}

extension BundleIdentity {
    /// Any text as an identity, unchecked: what a hostile manifest could carry.
    func withRawValue(_ text: String) -> BundleIdentity {
        let data = try! JSONEncoder().encode([text])
        return try! JSONDecoder().decode([BundleIdentity].self, from: data)[0]
    }
}
