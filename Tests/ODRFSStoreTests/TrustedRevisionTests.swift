import Foundation
import Logging
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

/// The cache's record of the highest manifest revision accepted per trust key, and the
/// cached signature next to the cached manifest.
@Suite("Trusted revisions")
struct TrustedRevisionTests {
    let keyA = KeyID(publicKey: [UInt8](repeating: 1, count: 32))
    let keyB = KeyID(publicKey: [UInt8](repeating: 2, count: 32))

    @Test("only a higher revision replaces the record; the record survives reopening the cache")
    func highestRevisionPerKey() throws {
        let cache = try TemporaryDirectory()
        let first = Date(timeIntervalSince1970: 1_700_000_000), later = Date(timeIntervalSince1970: 1_700_000_100)
        do {
            let store = try PackStore(root: cache.path, logger: Logger(label: "test"))
            #expect(try store.index.seenRevisions().isEmpty)
            try store.index.recordRevision(42, key: keyA, at: first)
            try store.index.recordRevision(41, key: keyA, at: later)   // older: ignored
            try store.index.recordRevision(42, key: keyA, at: later)   // same: keeps the first date
            try store.index.recordRevision(7, key: keyB, at: later)
            store.releaseLock()
        }
        let store = try PackStore(root: cache.path, logger: Logger(label: "test"))
        let seen = try store.index.seenRevisions()
        #expect(seen[keyA] == SeenRevision(revision: 42, date: first))
        #expect(seen[keyB] == SeenRevision(revision: 7, date: later))
        try store.index.recordRevision(43, key: keyA, at: later)
        #expect(try store.index.seenRevisions()[keyA] == SeenRevision(revision: 43, date: later))
    }

    @Test("the signature is cached with its manifest, and removed with an unsigned one")
    func cachedSignature() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: Logger(label: "test"))
        try store.saveManifest(Data("m1".utf8), signature: Data("s1".utf8))
        #expect(FileManager.default.contents(atPath: store.layout.manifestSignatureFile) == Data("s1".utf8))
        #expect(FileManager.default.contents(atPath: store.layout.manifestFile) == Data("m1".utf8))
        try store.saveManifest(Data("m2".utf8))
        #expect(!FileManager.default.fileExists(atPath: store.layout.manifestSignatureFile))
        #expect(FileManager.default.contents(atPath: store.layout.manifestFile) == Data("m2".utf8))
    }
}
