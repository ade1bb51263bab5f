import Foundation
import Logging
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

/// A mount stages its new manifest while the file index downloads and commits it once the
/// index is in the cache (issue 28): staging changes nothing the cache serves, a commit is
/// renames only, and a discarded stage leaves no file behind.
@Suite("Manifest staging")
struct ManifestStagingTests {
    let logger = Logger(label: "test")

    func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

    func temporaryFiles(of store: PackStore) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: store.layout.temporaryDirectory)
    }

    @Test("a staged manifest and signature replace the cache's only at the commit")
    func stagedThenCommitted() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        try store.saveManifest(Data("old".utf8), signature: Data("old sig".utf8))
        let staged = try store.stageManifest(Data("new".utf8), signature: Data("new sig".utf8))
        #expect(contents(store.layout.manifestFile) == Data("old".utf8))
        #expect(contents(store.layout.manifestSignatureFile) == Data("old sig".utf8))
        #expect(try temporaryFiles(of: store).count == 2)
        try store.commit(staged)
        #expect(contents(store.layout.manifestFile) == Data("new".utf8))
        #expect(contents(store.layout.manifestSignatureFile) == Data("new sig".utf8))
        #expect(try temporaryFiles(of: store).isEmpty)
        staged.discard()   // after a commit: no effect
        #expect(contents(store.layout.manifestFile) == Data("new".utf8))
    }

    @Test("an unsigned manifest's commit removes the old signature; a discarded stage leaves nothing")
    func unsignedAndDiscarded() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: logger)
        try store.saveManifest(Data("signed".utf8), signature: Data("sig".utf8))
        let dropped = try store.stageManifest(Data("dropped".utf8), signature: Data("dropped sig".utf8))
        dropped.discard()
        #expect(try temporaryFiles(of: store).isEmpty)
        #expect(contents(store.layout.manifestFile) == Data("signed".utf8))
        let unsigned = try store.stageManifest(Data("unsigned".utf8))
        #expect(contents(store.layout.manifestSignatureFile) == Data("sig".utf8))
        try store.commit(unsigned)
        #expect(contents(store.layout.manifestFile) == Data("unsigned".utf8))
        #expect(!FileManager.default.fileExists(atPath: store.layout.manifestSignatureFile))
    }

    @Test("in a store: bytes another bundle has are linked, and a commit still holds if that object went since staging")
    func storeObjects() throws {
        let root = try TemporaryDirectory()
        let first = try PackStore(store: root.path, bundle: "0123456789abcdef", logger: logger)
        let second = try PackStore(store: root.path, bundle: "fedcba9876543210", logger: logger)
        let bytes = Data("shared manifest".utf8)
        try first.saveManifest(bytes)
        let staged = try second.stageManifest(bytes)
        // Reused: nothing written for the second bundle.
        #expect(try temporaryFiles(of: second).isEmpty)
        try second.commit(staged)
        #expect(contents(second.layout.manifestFile) == bytes)
        #expect(FileIdentity.of(path: first.layout.manifestFile) == FileIdentity.of(path: second.layout.manifestFile))

        // The object goes between staging and commit (its last other link dropped).
        let newer = Data("newer manifest".utf8)
        try first.saveManifest(newer)
        let again = try second.stageManifest(newer)
        let object = first.layout.sharedManifestPath(sha256: ContentHash.of(newer).hex)
        #expect(unlink(object) == 0)
        #expect(unlink(first.layout.manifestFile) == 0)
        try second.commit(again)
        #expect(contents(second.layout.manifestFile) == newer)
        #expect(contents(object) == newer)
        #expect(try temporaryFiles(of: second).isEmpty)

        // The object is replaced by other bytes between staging and commit: the bundle does
        // not link what it never compared.
        let third = Data("third manifest".utf8)
        try first.saveManifest(third)
        let replaced = try second.stageManifest(third)
        let thirdObject = first.layout.sharedManifestPath(sha256: ContentHash.of(third).hex)
        try Data("not the manifest".utf8).write(to: URL(fileURLWithPath: thirdObject + ".junk"))
        #expect(rename(thirdObject + ".junk", thirdObject) == 0)
        try second.commit(replaced)
        #expect(contents(second.layout.manifestFile) == third)
        #expect(contents(thirdObject) == third)
    }
}
