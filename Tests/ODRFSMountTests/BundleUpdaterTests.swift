import Foundation
import Logging
import ODRFSBuild
import ODRFSControl
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import TestSupport
import Testing

/// The updater's plan, fetch and switch without FUSE: real dist dirs built by
/// `BundleBuilder`, prepared as a mount prepares them (``PreparedBundle``), and an updater
/// over the prepared revision with no kernel to tell. Refusals leave the mount where it is;
/// the control service maps the updater's errors to the codes `odrfs update` prints.
@Suite("BundleUpdater", .timeLimit(.minutes(2)))
struct BundleUpdaterTests {
    /// A bundle whose `level/one.bin` is `seed`'s bytes; the rest never changes.
    static func build(into dist: String, under root: String, seed: UInt8) throws {
        let source = root + "/source-\(seed)"
        let files: [String: [UInt8]] = [
            "readme.txt": Array("base file\n".utf8),
            "level/one.bin": SyntheticBundle.bytes(20_000, seed: seed),
            "level/two.bin": SyntheticBundle.bytes(9_000, seed: 200),
        ]
        for (path, bytes) in files {
            let full = source + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
        }
        try "tags:\n  Level: [\"level/**\"]\n".write(toFile: source + "/odr.yaml", atomically: true, encoding: .utf8)
        _ = try BundleBuilder(resourceRoot: source, logger: Logger(label: "test")).build(into: dist)
    }

    /// A prepared mount of `dist` and an updater that asks `updateFrom` (default: `dist`).
    struct Mounted {
        let bundle: PreparedBundle
        let revisions: MountRevisions
        let updater: BundleUpdater

        init(dist: String, cache: String, updateFrom: String? = nil) async throws {
            let logger = Logger(label: "updater-test", factory: { _ in SwiftLogNoOpLogHandler() })
            let configuration = MountConfiguration(origin: dist, mountpoint: "/nonexistent", cacheDirectory: cache)
            bundle = try await PreparedBundle.load(configuration, origin: try FileOrigin(root: dist), logger: logger) { _, _ in }
            revisions = MountRevisions(fileSystem: RevisionSwitchingFileSystem(bundle.revision))
            updater = BundleUpdater(origin: try FileOrigin(root: updateFrom ?? dist), revisions: revisions, kernel: nil,
                                    configuration: configuration, logger: logger)
        }

        func shutdown() async {
            await revisions.current.manager.shutdown()
        }
    }

    @Test("an unchanged manifest plans nothing and switches nothing")
    func unchangedManifest() async throws {
        let root = try TemporaryDirectory()
        try Self.build(into: root.path + "/dist", under: root.path, seed: 1)
        let mounted = try await Mounted(dist: root.path + "/dist", cache: root.path + "/cache")
        let (report, candidate) = try await mounted.updater.plan()
        #expect(candidate == nil)
        #expect(report == UpdateReport(mountedRevision: 1, availableRevision: 1, changedPacks: [], downloadBytes: 0, reusedBytes: 0))
        let updated = try await mounted.updater.update()
        #expect(updated.switched == nil)
        #expect(mounted.revisions.current === mounted.bundle.revision)
        await mounted.shutdown()
    }

    @Test("a newer revision is planned, fetched and switched to as one new MountedRevision")
    func switchesToANewerRevision() async throws {
        let root = try TemporaryDirectory()
        let dist = root.path + "/dist"
        try Self.build(into: dist, under: root.path, seed: 1)
        let mounted = try await Mounted(dist: dist, cache: root.path + "/cache")
        let first = mounted.bundle.revision
        try Self.build(into: dist, under: root.path, seed: 2)
        let check = try await mounted.updater.check()
        #expect(check.mountedRevision == 1 && check.availableRevision == 2)
        #expect(check.changedPacks.contains("Level"))
        #expect(mounted.revisions.current === first, "a check switches nothing")

        let report = try await mounted.updater.update()
        #expect(report.switched == true)
        let current = mounted.revisions.current
        #expect(current !== first)
        #expect(current.revision == 2)
        // The unit's parts belong together: one manifest for the manager, the view and the index.
        #expect(current.manager.manifest.bundleVersion == current.manifest.bundleVersion)
        #expect(current.fileSystem.manager === current.manager)
        #expect(current.fileSystem.index === current.index)
        #expect(current.manager !== first.manager)
        #expect(current.index.lookup(path: "level/one.bin") != nil)
        // The old manager stays reachable for the retains it owns.
        #expect(mounted.revisions.manager(generation: 1) === first.manager)
        #expect(mounted.revisions.manager(generation: 2) === current.manager)
        await mounted.shutdown()
    }

    @Test("an older revision is refused as a rollback, and the mount stays")
    func refusesARollback() async throws {
        let root = try TemporaryDirectory()
        let newer = root.path + "/newer", older = root.path + "/older"
        try Self.build(into: newer, under: root.path, seed: 1)
        try Self.build(into: newer, under: root.path, seed: 2)   // revision 2
        try Self.build(into: older, under: root.path, seed: 3)   // revision 1
        let mounted = try await Mounted(dist: newer, cache: root.path + "/cache", updateFrom: older)
        let error = await #expect(throws: UpdateError.self) { try await mounted.updater.update() }
        #expect(error?.kind == .rollbackRefused)
        #expect(error?.message.contains("the mount serves revision 2, and updates never go back") == true)
        #expect(mounted.revisions.current === mounted.bundle.revision)
        await mounted.shutdown()
    }

    @Test("a different manifest with the same revision is planned but never switched to")
    func refusesTheSameRevisionWithAnotherManifest() async throws {
        let root = try TemporaryDirectory()
        let one = root.path + "/one", other = root.path + "/other"
        try Self.build(into: one, under: root.path, seed: 1)
        try Self.build(into: other, under: root.path, seed: 2)   // also revision 1
        let mounted = try await Mounted(dist: one, cache: root.path + "/cache", updateFrom: other)
        let (_, candidate) = try await mounted.updater.plan()
        #expect(candidate?.manifest.revision == 1)
        let error = await #expect(throws: UpdateError.self) { try await mounted.updater.update() }
        #expect(error?.kind == .rollbackRefused)
        #expect(error?.message.contains("has the same revision 1; refusing a revision that is not newer") == true)
        #expect(mounted.revisions.current === mounted.bundle.revision)
        await mounted.shutdown()
    }

    @Test("a new revision whose file index is unusable is refused before anything is fetched")
    func refusesAnUnusableIndex() async throws {
        let root = try TemporaryDirectory()
        let dist = root.path + "/dist"
        try Self.build(into: dist, under: root.path, seed: 1)
        let mounted = try await Mounted(dist: dist, cache: root.path + "/cache")
        try Self.build(into: dist, under: root.path, seed: 2)
        let manifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: dist + "/manifest.json")))
        try Data(repeating: 0x5A, count: Int(manifest.index.bytes.value)).write(to: URL(fileURLWithPath: dist + "/" + manifest.index.file))
        let error = await #expect(throws: UpdateError.self) { try await mounted.updater.update() }
        #expect(error?.kind == .resourceUnavailable)
        #expect(error?.message.contains("the new revision's file index \(manifest.index.file) is unusable") == true)
        #expect(mounted.revisions.current === mounted.bundle.revision)
        await mounted.shutdown()
    }

    @Test("a second update while one runs is refused, not queued")
    func refusesAConcurrentUpdate() async throws {
        let root = try TemporaryDirectory()
        try Self.build(into: root.path + "/dist", under: root.path, seed: 1)
        let mounted = try await Mounted(dist: root.path + "/dist", cache: root.path + "/cache")
        mounted.updater.busy.withLock { $0 = true }
        let error = await #expect(throws: UpdateError.self) { try await mounted.updater.update() }
        #expect(error?.kind == .busy)
        #expect(error?.message == "an update or variant switch of this mount is already in progress")
        await mounted.shutdown()
    }

    @Test("fetch failures become update kinds by what the caller can do about them")
    func fetchErrorKinds() {
        let cases: [(FetchError.Kind, UpdateError.Kind)] = [
            (.unreachable, .originUnreachable), (.unauthorized, .originUnreachable), (.invalidOrigin, .originUnreachable),
            (.unsupported, .originUnreachable), (.cancelled, .cancelled), (.notFound, .resourceUnavailable),
            (.corrupt, .resourceUnavailable), (.noSpace, .resourceUnavailable), (.localIO, .resourceUnavailable),
        ]
        for (fetch, expected) in cases {
            let error = UpdateError(FetchError(fetch, "why"), "cannot fetch pack 'Level' of revision 2")
            #expect(error.kind == expected, "\(fetch)")
            #expect(error.message.hasPrefix("cannot fetch pack 'Level' of revision 2: "))
        }
    }

    @Test("only the control service maps update errors: each kind to one code, the message unchanged")
    func controlServiceMapping() {
        let cases: [(UpdateError.Kind, ControlError.Code)] = [
            (.busy, .badRequest), (.rollbackRefused, .rollbackRefused), (.originUnreachable, .originUnreachable),
            (.cancelled, .cancelled), (.resourceUnavailable, .resourceUnavailable), (.internalError, .internalError),
        ]
        for (kind, code) in cases {
            let mapped = MountControlService.controlError(UpdateError(kind, "what happened"))
            #expect(mapped.code == code)
            #expect(mapped.message == "what happened")
        }
    }

    @Test("odrfs update through the control service: a refused rollback arrives as rollbackRefused")
    func controlServiceUpdate() async throws {
        let root = try TemporaryDirectory()
        let newer = root.path + "/newer", older = root.path + "/older"
        try Self.build(into: newer, under: root.path, seed: 1)
        try Self.build(into: newer, under: root.path, seed: 2)
        try Self.build(into: older, under: root.path, seed: 3)
        let mounted = try await Mounted(dist: newer, cache: root.path + "/cache", updateFrom: older)
        let service = MountControlService(revisions: mounted.revisions, updater: mounted.updater,
                                          logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        for check in [true, false] {
            let error = await #expect(throws: ControlError.self) { try await service.update(check: check) }
            #expect(error?.code == .rollbackRefused)
            #expect(error?.message.contains("updates never go back") == true)
        }
        let bare = try MountControlService(manager: mounted.bundle.manager, logger: Logger(label: "test"))
        let unsupported = await #expect(throws: ControlError.self) { try await bare.update(check: true) }
        #expect(unsupported?.code == .unsupported)
        await mounted.shutdown()
    }
}
