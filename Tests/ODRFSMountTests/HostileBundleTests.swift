import Crypto
import FaultOriginSupport
import Foundation
import ODRFSCompression
import Logging
import ODRFSBuild
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// Issue 12's hostile-origin test: hundreds of mutated dist dirs — manifests with hostile
/// numbers and shapes, file indexes with flipped bytes whose hashes the manifest is fixed
/// up to match (so the mutation reaches the index parser), corrupt and truncated packs —
/// go through the same preparation a mount does and, when that accepts them, every file
/// is opened and read. The daemon's code must never trap (a trap kills this test process),
/// never hang, and never hand out a byte that is not in a pack verified against the
/// manifest: every read equals the original pack's bytes at the file's extent, or fails.
@Suite("Hostile bundles", .timeLimit(.minutes(3)))
struct HostileBundleTests {
    static let mutations = 600

    /// A small real bundle: three tags, a shared pack, a symlink, an empty file, one file
    /// over a chunk (the builder's chunks are 1 MiB).
    static func buildOriginal(in root: String) throws -> String {
        let source = root + "/source"
        let files: [String: [UInt8]] = [
            "readme.txt": Array("base file\n".utf8),
            "a/one.bin": SyntheticBundle.bytes(5_000, seed: 1),
            "a/two.bin": SyntheticBundle.bytes(1_200_000, seed: 2),
            "b/three.bin": SyntheticBundle.bytes(7_000, seed: 3),
            "shared/both.bin": SyntheticBundle.bytes(3_000, seed: 4),
            "b/empty.txt": [],
        ]
        for (path, bytes) in files {
            let full = source + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
        }
        try FileManager.default.createSymbolicLink(atPath: source + "/b/link", withDestinationPath: "three.bin")
        try """
        tags:
          A: ["a/**", "shared/**"]
          B: ["b/**", "shared/**"]
        initial-install: [A]
        """.write(toFile: source + "/odr.yaml", atomically: true, encoding: .utf8)
        let dist = root + "/original"
        _ = try BundleBuilder(resourceRoot: source, logger: Logger(label: "test")).build(into: dist)
        return dist
    }

    /// The original dist dir, its manifest, and its packs' bytes by content hash: what any
    /// verified read must come from.
    static func original(in root: String) throws -> (dist: String, manifestData: Data, manifest: Manifest, packBytes: [String: [UInt8]]) {
        let dist = try buildOriginal(in: root)
        let manifestData = try Data(contentsOf: URL(fileURLWithPath: dist + "/manifest.json"))
        let manifest = try Manifest.decode(manifestData)
        var packBytes: [String: [UInt8]] = [:]
        for pack in manifest.packs {
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: dist + "/" + pack.file)))
            // A compressed pack (the builder's default): the verified bytes are its frames' contents.
            if let table = try FrameTable(validating: pack, chunkSize: manifest.chunkSize) {
                let file = bytes
                bytes = try (0..<table.frameCount).flatMap { frame in
                    let range = table.compressedRange(ofFrame: frame)
                    return try Array(file[Int(range.lowerBound)..<Int(range.upperBound)]).withUnsafeBytes {
                        try ZstdFrame.decompress($0, contentSize: Int(table.uncompressedRange(ofFrame: frame).count))
                    }
                }
            }
            packBytes[pack.sha256.hex] = bytes
        }
        return (dist, manifestData, manifest, packBytes)
    }

    @Test("hundreds of mutated manifests, indexes and packs: no trap, no hang, never a byte outside a verified pack")
    func mutatedBundles() async throws {
        let root = try TemporaryDirectory()
        let (original, manifestData, manifest, packBytes) = try Self.original(in: root.path)
        var generator = SplitMix(seed: 12)
        var outcomes: [String: Int] = [:]
        for round in 0..<Self.mutations {
            let dist = root.path + "/dist-\(round)"
            try FileManager.default.copyItem(atPath: original, toPath: dist)
            let kind = try Mutator(dist: dist, manifest: manifest, manifestData: manifestData).mutate(using: &generator)
            let outcome = try await Self.exercise(origin: dist, cache: root.path + "/cache-\(round)", packBytes: packBytes)
            outcomes["\(kind): \(outcome)", default: 0] += 1
            try? FileManager.default.removeItem(atPath: dist)
            try? FileManager.default.removeItem(atPath: root.path + "/cache-\(round)")
        }
        print("hostile bundles: \(outcomes.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", "))")
        #expect(outcomes.keys.contains { $0.hasSuffix("refused") }, "no mutation was ever refused: the mutator does nothing")
        #expect(outcomes.keys.contains { $0.hasSuffix("served") }, "no mutated bundle was ever served: reads were never checked")
    }

    @Test("mutated bundles behind an HTTP origin that lies, truncates, resets and stalls: no trap, no hang past the fetch timeout, never a byte outside a verified pack")
    func mutatedBundlesOverALyingOrigin() async throws {
        let root = try TemporaryDirectory()
        let (original, manifestData, manifest, packBytes) = try Self.original(in: root.path)
        let server = try await FaultOrigin.start()
        var generator = SplitMix(seed: 34)
        var outcomes: [String: Int] = [:]
        for round in 0..<Self.httpRounds {
            let dist = root.path + "/dist-\(round)"
            try FileManager.default.copyItem(atPath: original, toPath: dist)
            let kind = Bool.random(using: &generator)
                ? try Mutator(dist: dist, manifest: manifest, manifestData: manifestData).mutate(using: &generator) : "intact"
            // Every file of the dist dir, served under its own prefix, some of them with lies.
            let prefix = "/r\(round)/"
            let files = FileManager.default.enumerator(atPath: dist)?.allObjects.compactMap { $0 as? String } ?? []
            var lies = 0
            for file in files.sorted() {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: dist + "/" + file, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
                let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: dist + "/" + file)))
                server.setFile(prefix + file, bytes)
                if Int.random(in: 0..<3, using: &generator) == 0 {
                    server.script(prefix + file, (0..<Int.random(in: 1...3, using: &generator)).map { _ in
                        Self.lie(bytes: bytes.count, using: &generator)
                    })
                    lies += 1
                }
            }
            let started = ContinuousClock.now
            let outcome = try await Self.exercise(origin: server.baseURL + prefix, cache: root.path + "/cache-\(round)",
                                                  packBytes: packBytes, fetchDeadline: .milliseconds(800))
            let elapsed = ContinuousClock.now - started
            // Each fetch may wait out its deadline once per file at most; nothing waits for ever.
            #expect(elapsed < .seconds(30), "round \(round) took \(elapsed)")
            outcomes["\(kind)\(lies > 0 ? " + lies" : ""): \(outcome)", default: 0] += 1
            try? FileManager.default.removeItem(atPath: dist)
            try? FileManager.default.removeItem(atPath: root.path + "/cache-\(round)")
        }
        await server.stop()
        print("hostile HTTP origin: \(outcomes.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", "))")
        #expect(outcomes.keys.contains { $0.contains("+ lies") && $0.hasSuffix("served") }, "no lying round was ever served")
    }

    static let httpRounds = 60

    /// One lie a broken or hostile HTTP server tells.
    static func lie(bytes: Int, using generator: inout SplitMix) -> FaultOrigin.Behaviour {
        switch Int.random(in: 0..<10, using: &generator) {
        case 0: return .truncate(after: Int.random(in: 0...max(bytes, 1), using: &generator))
        case 1: return .reset(after: Int.random(in: 0...max(bytes, 1), using: &generator))
        case 2: return .partialContent(contentRange: ["bytes 0-9223372036854775807/*", "bytes -5-3/10", "bytes 3-1/2",
                                                      "bytes 0-\(bytes)/\(bytes)", "garbage"].randomElement(using: &generator)!)
        case 3: return .status([404, 403, 500, 502, 418].randomElement(using: &generator)!)
        case 4: return .busy(status: 503, retryAfter: ["1", "-1", "99999999999999999999", "Sun, 06 Nov -2147483648 08:49:37 GMT",
                                                        "Fri, 31 Dec 9999 23:59:60 GMT", ""].randomElement(using: &generator)!)
        case 5: return .redirect(["http+unix://%2Ftmp%2Fx/y", "ftp://127.0.0.1/x", "http://127.0.0.1:1/"].randomElement(using: &generator)!)
        case 6: return .stall
        default: return .serveIgnoringRange
        }
    }

    /// Prepares the bundle at `origin` (a dist path or URL) as a mount would; if accepted,
    /// opens and reads every file.
    static func exercise(origin location: String, cache: String, packBytes: [String: [UInt8]],
                         fetchDeadline: Duration = .seconds(5)) async throws -> String {
        var configuration = MountConfiguration(origin: location, mountpoint: "/nonexistent", cacheDirectory: cache)
        configuration.originOptions.fetchDeadline = fetchDeadline
        let origin: any Origin
        do {
            origin = try OriginLocator.origin(for: location, options: configuration.originOptions,
                                              logger: Logger(label: "hostile", factory: { _ in SwiftLogNoOpLogHandler() }))
        } catch {
            return "refused"
        }
        let outcome = try await exercise(origin, configuration: configuration, packBytes: packBytes)
        await origin.shutdown()
        return outcome
    }

    static func exercise(_ origin: any Origin, configuration: MountConfiguration, packBytes: [String: [UInt8]]) async throws -> String {
        let bundle: PreparedBundle
        do {
            bundle = try await PreparedBundle.load(configuration, origin: origin, logger: Logger(label: "hostile", factory: { _ in SwiftLogNoOpLogHandler() })) { _, _ in }
        } catch {
            return "refused"
        }
        defer { Task { [manager = bundle.manager] in await manager.shutdown() } }
        var failedReads = 0
        for number in 0..<bundle.index.entryCount {
            let entryNumber = EntryNumber(UInt32(number))
            guard let entry = bundle.index.entry(entryNumber), entry.kind == .regularFile, let pack = entry.pack,
                  let extent = entry.packExtent else { continue }
            let descriptor = bundle.manifest.pack(pack)
            let reader: PackReader
            do {
                reader = try await withDeadline(.seconds(20)) {
                    try await bundle.manager.openReader(pack, prefix: min(extent.offset + extent.size, descriptor.bytes.value))
                }
            } catch {
                failedReads += 1
                continue
            }
            defer { reader.close() }
            // Wait for the whole file (or learn it will not come), then read it.
            let end = extent.offset + extent.size
            let whole: Bool = await withCheckedContinuation { continuation in
                if reader.file.whenVerified(end, waiter: VerifiedFile.makeWaiterID(), { continuation.resume(returning: (try? $0.get()) != nil) }) {
                    continuation.resume(returning: true)
                }
            }
            guard whole else {
                failedReads += 1
                continue
            }
            var bytes = [UInt8](repeating: 0, count: Int(extent.size))
            let count = bytes.isEmpty ? 0 : pread(reader.descriptor, &bytes, bytes.count, off_t(extent.offset))
            let original = try #require(packBytes[descriptor.sha256.hex], "a verified pack that is not one of the originals")
            #expect(count == bytes.count)
            #expect(end <= Int64(original.count) && bytes[...] == original[Int(extent.offset)..<Int(end)],
                    "file \(bundle.index.path(of: entryNumber)) read bytes that are not its pack's")
        }
        return failedReads == 0 ? "served" : "served with failed reads"
    }
}

/// Runs `body`, failing if it takes longer than `limit` (a hang is a defect, not a wait).
func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        guard let first = try await group.next(), let value = first else {
            group.cancelAll()
            Issue.record("timed out after \(limit)")
            throw CancellationError()
        }
        group.cancelAll()
        return value
    }
}


/// Mutates a copy of a dist dir the way a hostile or broken origin could.
struct Mutator {
    let dist: String
    let manifest: Manifest
    let manifestData: Data

    /// Made fresh on each use: JSON values are not Sendable.
    static var hostileValues: [Any] {
        [
            Int64.max, Int64.min, -1, 0, 1, 4096, 1 << 53, 1e300, -1e300, "", "x", "../../etc/passwd", "/etc/passwd",
            String(repeating: "a", count: 5000), [Any](), [String: Any](), NSNull(), true,
            "0000000000000000000000000000000000000000000000000000000000000000",
        ]
    }

    /// Applies one random mutation; returns its kind.
    func mutate(using generator: inout SplitMix) throws -> String {
        switch Int.random(in: 0..<7, using: &generator) {
        case 0, 1:
            var json = try JSONSerialization.jsonObject(with: manifestData) as! [String: Any]
            let count = Int.random(in: 1...3, using: &generator)
            for _ in 0..<count { json = Self.mutateValue(json, using: &generator) as! [String: Any] }
            try writeManifest(json)
            return "manifest field"
        case 2:
            try mutateIndex(using: &generator, truncate: false)
            return "index bytes (hash fixed)"
        case 3:
            try mutateIndex(using: &generator, truncate: true)
            return "index truncated (hash fixed)"
        case 4:
            let pack = manifest.packs.randomElement(using: &generator)!
            var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: dist + "/" + pack.file)))
            if bytes.isEmpty || Bool.random(using: &generator) {
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator))) + (Bool.random(using: &generator) ? [1, 2, 3] : [])
            } else {
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] ^= UInt8.random(in: 1...255, using: &generator)
                }
            }
            try Data(bytes).write(to: URL(fileURLWithPath: dist + "/" + pack.file))
            return "pack bytes"
        case 5:
            var json = try JSONSerialization.jsonObject(with: manifestData) as! [String: Any]
            var packs = json["packs"] as! [Any]
            let i = Int.random(in: 0..<packs.count, using: &generator)
            let j = Int.random(in: 0..<packs.count, using: &generator)
            packs.swapAt(i, j)
            if Bool.random(using: &generator) { packs.append(packs[i]) }
            json["packs"] = packs
            try writeManifest(json)
            return "packs reordered"
        default:
            var bytes = Array(manifestData)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            try Data(bytes).write(to: URL(fileURLWithPath: dist + "/manifest.json"))
            return "manifest bytes"
        }
    }

    /// Replaces one random leaf (or drops one key) somewhere in `value`.
    static func mutateValue(_ value: Any, using generator: inout SplitMix) -> Any {
        if var object = value as? [String: Any], !object.isEmpty {
            let key = object.keys.sorted().randomElement(using: &generator)!
            switch Int.random(in: 0..<5, using: &generator) {
            case 0: object.removeValue(forKey: key)
            case 1: object[key] = hostileValues.randomElement(using: &generator)!
            default: object[key] = mutateValue(object[key]!, using: &generator)
            }
            return object
        }
        if var array = value as? [Any], !array.isEmpty {
            let index = Int.random(in: 0..<array.count, using: &generator)
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: array.remove(at: index)
            case 1: array.append(array[index])
            default: array[index] = mutateValue(array[index], using: &generator)
            }
            return array
        }
        return hostileValues.randomElement(using: &generator)!
    }

    /// Flips or cuts the file index, then fixes the manifest's index reference (name, size,
    /// SHA-256) so the damage passes the hash check and reaches the index parser.
    func mutateIndex(using generator: inout SplitMix, truncate: Bool) throws {
        let oldPath = dist + "/" + manifest.index.file
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: oldPath)))
        if truncate {
            bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &generator)))
        } else {
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] ^= UInt8.random(in: 1...255, using: &generator)
            }
        }
        let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        let file = "index/\(digest).\(FileIndex.fileExtension)"
        try FileManager.default.removeItem(atPath: oldPath)
        try Data(bytes).write(to: URL(fileURLWithPath: dist + "/" + file))
        var json = try JSONSerialization.jsonObject(with: manifestData) as! [String: Any]
        var index = json["index"] as! [String: Any]
        index["sha256"] = digest
        index["bytes"] = bytes.count
        index["file"] = file
        json["index"] = index
        try writeManifest(json)
    }

    func writeManifest(_ json: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
        try data.write(to: URL(fileURLWithPath: dist + "/manifest.json"))
    }
}
