import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// A load stages the new manifest while the file index downloads and commits it only once
/// the index is verified (issue 28); a load that fails abandons everything it started, the
/// staged manifest included, and the cache keeps the manifest it had.
@Suite("Prepared bundle loading")
struct PreparedBundleLoadTests {
    static let quiet = Logger(label: "load", factory: { _ in SwiftLogNoOpLogHandler() })

    static func load(_ dist: String, cache: String) async throws -> PreparedBundle {
        let configuration = MountConfiguration(origin: dist, mountpoint: "/nonexistent", cacheDirectory: cache)
        let origin = try FileOrigin(root: dist)
        return try await PreparedBundle.load(configuration, origin: origin, logger: quiet) { _, _ in }
    }

    /// Loads, then shuts the load's manager down and lets go of its cache; returns the index's path in the dist dir.
    static func loadAndRelease(_ dist: String, cache: String) async throws -> String {
        let bundle = try await load(dist, cache: cache)
        await bundle.manager.shutdown()
        bundle.manager.store.releaseLock()
        return bundle.manifest.index.file
    }

    static func temporaryFiles(in cache: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: CacheLayout(root: cache).temporaryDirectory)
    }

    @Test("a verified index: the manifest is the cache's once the load returns, with nothing left in tmp/")
    func committedAfterTheIndex() async throws {
        let root = try TemporaryDirectory()
        let dist = try HostileBundleTests.buildOriginal(in: root.path)
        let cache = root.path + "/cache"
        let bundle = try await Self.load(dist, cache: cache)
        await bundle.manager.shutdown()
        let layout = CacheLayout(root: cache)
        #expect(FileManager.default.contents(atPath: layout.manifestFile) == FileManager.default.contents(atPath: dist + "/manifest.json"))
        #expect(FileManager.default.fileExists(atPath: layout.root + "/" + bundle.manifest.index.file))
        #expect(try Self.temporaryFiles(in: cache).isEmpty)
    }

    @Test("a damaged index fails the load: the staged manifest is discarded and the cache keeps its old one")
    func abandonedWithADamagedIndex() async throws {
        let root = try TemporaryDirectory()
        let dist = try HostileBundleTests.buildOriginal(in: root.path)
        let cache = root.path + "/cache"
        // A first load leaves a manifest in the cache; then the origin's manifest changes
        // (a new revision) and its index is damaged.
        let indexFile = try await Self.loadAndRelease(dist, cache: cache)
        let layout = CacheLayout(root: cache)
        let cachedBefore = try #require(FileManager.default.contents(atPath: layout.manifestFile))
        var json = try #require(try JSONSerialization.jsonObject(with: cachedBefore) as? [String: Any])
        json["revision"] = 2
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: dist + "/manifest.json"))
        let indexPath = dist + "/" + indexFile
        var index = try Data(contentsOf: URL(fileURLWithPath: indexPath))
        index[index.count / 2] ^= 0xFF
        try index.write(to: URL(fileURLWithPath: indexPath))
        // The cached copy would be used without a download: remove it so the damaged one is fetched.
        try FileManager.default.removeItem(atPath: layout.root + "/" + indexFile)

        let error = await #expect(throws: MountError.self) { _ = try await Self.load(dist, cache: cache) }
        #expect(error?.description.contains("file index") == true, "\(error.map { "\($0)" } ?? "")")
        #expect(FileManager.default.contents(atPath: layout.manifestFile) == cachedBefore)
        #expect(try Self.temporaryFiles(in: cache).isEmpty)
    }

    @Test("the manifest is written while the index downloads, and becomes the cache's only after it")
    func stagedWhileTheIndexDownloads() async throws {
        let root = try TemporaryDirectory()
        let dist = try HostileBundleTests.buildOriginal(in: root.path)
        let cache = root.path + "/cache"
        let manifestBytes = try Data(contentsOf: URL(fileURLWithPath: dist + "/manifest.json"))
        let indexFile = try Manifest.decode(manifestBytes).index.file
        let files = try Self.files(of: dist)
        let origin = HeldOrigin(files: files, pieceBytes: 4096)
        for path in files.keys where path != indexFile { origin.allowAll(path) }
        let configuration = MountConfiguration(origin: dist, mountpoint: "/nonexistent", cacheDirectory: cache)
        let loading = Task { try await PreparedBundle.load(configuration, origin: origin, logger: Self.quiet) { _, _ in } }
        defer { loading.cancel() }
        let layout = CacheLayout(root: cache)
        // Held at its first piece, the index cannot be verified; the manifest is staged meanwhile.
        var staged = false
        for _ in 0..<2_000 where !staged {
            try await Task.sleep(for: .milliseconds(10))
            guard origin.isWaiting(indexFile) else { continue }
            let names = (try? Self.temporaryFiles(in: cache)) ?? []
            staged = names.contains { $0.hasPrefix("manifest.") && FileManager.default.contents(atPath: layout.temporaryDirectory + "/" + $0) == manifestBytes }
        }
        #expect(staged, "no staged manifest in tmp/ while the index was held")
        #expect(origin.isWaiting(indexFile))
        #expect(!FileManager.default.fileExists(atPath: layout.manifestFile), "the manifest was put in place before its index")
        origin.allowAll(indexFile)
        let bundle = try await loading.value
        await bundle.manager.shutdown()
        #expect(FileManager.default.contents(atPath: layout.manifestFile) == manifestBytes)
        #expect(try Self.temporaryFiles(in: cache).isEmpty)
    }

    /// The dist dir's files, for an in-memory origin.
    static func files(of dist: String) throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        let enumerator = try #require(FileManager.default.enumerator(atPath: dist))
        while let path = enumerator.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: dist + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files[path] = Array(try Data(contentsOf: URL(fileURLWithPath: dist + "/" + path)))
            }
        }
        return files
    }

    @Test("without trusted keys the index's download starts once the manifest's first bytes name it; with keys, only after the whole is authenticated")
    func indexStartsFromTheManifestsFirstBytes() async throws {
        let root = try TemporaryDirectory()
        let dist = try HostileBundleTests.buildOriginal(in: root.path)
        let manifestBytes = try Data(contentsOf: URL(fileURLWithPath: dist + "/manifest.json"))
        #expect(manifestBytes.count > 1024, "the manifest must outlast its first piece")
        let indexFile = try Manifest.decode(manifestBytes).index.file
        let key = SigningKey()
        try key.sign(manifestBytes).fileContents.write(toFile: dist + "/" + ManifestSignature.fileName, atomically: true, encoding: .utf8)
        let files = try Self.files(of: dist)
        for signed in [false, true] {
            let origin = HeldOrigin(files: files, pieceBytes: 1024)
            for path in files.keys where path != Manifest.fileName { origin.allowAll(path) }
            origin.allow(Manifest.fileName, pieces: 1)
            var configuration = MountConfiguration(origin: dist, mountpoint: "/nonexistent", cacheDirectory: root.path + "/cache-\(signed)")
            if signed { configuration.trustedKeys = [key.publicKey] }
            let loading = Task { [configuration] in try await PreparedBundle.load(configuration, origin: origin, logger: Self.quiet) { _, _ in } }
            defer { loading.cancel() }
            // The manifest's first piece is in; its second is held.
            for _ in 0..<2_000 where !origin.isWaiting(Manifest.fileName) { try await Task.sleep(for: .milliseconds(10)) }
            #expect(origin.isWaiting(Manifest.fileName), "\(origin.requests(Manifest.fileName)) of \(manifestBytes.count)")
            if signed {
                try await Task.sleep(for: .milliseconds(300))
                #expect(origin.requests(indexFile).isEmpty, "an index named by unauthenticated bytes was fetched")
            } else {
                for _ in 0..<2_000 where origin.requests(indexFile).isEmpty { try await Task.sleep(for: .milliseconds(10)) }
                #expect(!origin.requests(indexFile).isEmpty, "the index waited for the whole manifest")
            }
            #expect(origin.isWaiting(Manifest.fileName))
            origin.allowAll(Manifest.fileName)
            let bundle = try await loading.value
            await bundle.manager.shutdown()
            #expect(bundle.isSigned == signed)
            #expect(origin.requests(indexFile).count == 1)
        }
    }
}
