import Foundation
import Logging
import ODRFSCore
import ODRFSStore
import TestSupport
import Testing

@Suite("PackStore")
struct PackStoreTests {
    @Test("a second store on the same cache directory is refused with a clear message")
    func exclusiveLock() throws {
        let cache = try TemporaryDirectory()
        do {
            let first = try PackStore(root: cache.path, logger: Logger(label: "test"))
            do {
                _ = try PackStore(root: cache.path, logger: Logger(label: "test"))
                Issue.record("two stores shared one cache directory")
            } catch {
                #expect(error.kind == .locked)
                #expect(error.message.contains(cache.path))
                #expect(error.message.contains("already in use"))
            }
            withExtendedLifetime(first) {}
        }
        // Released with the first store.
        _ = try PackStore(root: cache.path, logger: Logger(label: "test"))
    }

    @Test("partial downloads left by a crash are removed at startup")
    func temporaryFilesCleaned() throws {
        let cache = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: cache.path + "/tmp", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: cache.path + "/tmp/pack.abc123", contents: Data([1, 2, 3]))
        _ = try PackStore(root: cache.path, logger: Logger(label: "test"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path + "/tmp").isEmpty)
    }

    @Test("a dropped temporary file leaves nothing behind; a published one is in place")
    func publishAndDiscard() throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: Logger(label: "test"))
        do {
            let abandoned = try store.makeTemporaryFile(label: "pack")
            try [UInt8](repeating: 7, count: 10).withUnsafeBytes { try abandoned.write($0) }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path + "/tmp").isEmpty)
        let file = try store.makeTemporaryFile(label: "pack")
        try [UInt8](repeating: 9, count: 10).withUnsafeBytes { try file.write($0) }
        try store.publish(file, to: cache.path + "/packs/x.tar")
        #expect(FileManager.default.contents(atPath: cache.path + "/packs/x.tar") == Data(repeating: 9, count: 10))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path + "/tmp").isEmpty)
    }
}
