import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// The delta source of the acquisition pipeline (issue 22, item 3; DeltaPackAssembler had
/// no unit test): a changed pack is built from the cached packs of the mounted revision plus
/// the spans the origin sends, and published only if it verifies.
@Suite(.timeLimit(.minutes(1)))
struct DeltaPackSourceTests {
    struct Setup {
        let root: TemporaryDirectory
        let store: PackStore
        let assembler: DeltaPackAssembler
        let pack: PackDescriptor
        let plan: PackAssemblyPlan
        let expected: [UInt8]
        let mounted: Manifest
    }

    /// Revision 1's packs in a cache, revision 2 on a file origin, and the plan for pack A.
    static func setUp() throws -> Setup {
        let root = try TemporaryDirectory()
        let old = try UpdatePlanTests.build(UpdatePlanTests.revision1, in: root.path, name: "r1", compression: .none)
        let new = try UpdatePlanTests.build(UpdatePlanTests.revision2, in: root.path, name: "r2", compression: .none)
        let store = try PackStore(root: root.path + "/cache", logger: Logger(label: "test"))
        for pack in old.manifest.packs {
            try FileManager.default.copyItem(atPath: root.path + "/r1-dist/" + pack.file, toPath: store.path(of: pack))
        }
        let local = Set(old.manifest.packs.indices.map { PackNumber(UInt32($0)) })
        let update = UpdatePlan.make(mounted: old.manifest, mountedIndex: old.index, local: local,
                                     available: new.manifest, availableIndex: new.index)
        let fetch = try #require(update.fetches.first)
        let pack = new.manifest.pack(fetch.pack)
        let origin = try FileOrigin(root: root.path + "/r2-dist")
        let assembler = DeltaPackAssembler(origin: origin, store: store, io: .cache, mounted: old.manifest, index: new.index,
                                           chunkSize: new.manifest.chunkSize, logger: Logger(label: "test"))
        let expected = [UInt8](try Data(contentsOf: URL(fileURLWithPath: root.path + "/r2-dist/" + pack.file)))
        return Setup(root: root, store: store, assembler: assembler, pack: pack, plan: fetch.assembly, expected: expected,
                     mounted: old.manifest)
    }

    static func temporaryFiles(of store: PackStore) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: store.layout.temporaryDirectory)) ?? []
    }

    @Test func aChangedPackIsAssembledFromCachedBytesAndTheMissingSpans() async throws {
        let setup = try Self.setUp()
        let fetched = try await setup.assembler.assemble(setup.pack, plan: setup.plan)
        let published = [UInt8](try Data(contentsOf: URL(fileURLWithPath: setup.store.path(of: setup.pack))))
        #expect(published == setup.expected)
        // A file origin reads the pack whole and keeps only the spans' bytes: the rest of the
        // published pack, three quarters and more of it, came from the cached revision.
        #expect(fetched > 0)
        #expect(setup.plan.remoteBytes < setup.pack.bytes.value / 4, "remote \(setup.plan.remoteBytes) of \(setup.pack.bytes.value)")
        #expect(Self.temporaryFiles(of: setup.store).isEmpty)
    }

    static func damage(_ path: String) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        for i in stride(from: 0, to: bytes.count, by: 512) { bytes[i] ^= 0x5A }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Cached source packs that changed under the mount: the bytes copied from them on
    /// trust (whole files, whole chunks) fail their chunks' hashes after the fetch, those
    /// chunks are fetched again, and the published pack is right.
    @Test func chunksCopiedFromADamagedCacheAreFetchedAgain() async throws {
        let setup = try Self.setUp()
        for pack in setup.mounted.packs { try Self.damage(setup.store.path(of: pack)) }
        try await setup.assembler.assemble(setup.pack, plan: setup.plan)
        let published = [UInt8](try Data(contentsOf: URL(fileURLWithPath: setup.store.path(of: setup.pack)))) == setup.expected
        #expect(published, "the published pack differs from revision 2's")
        #expect(Self.temporaryFiles(of: setup.store).isEmpty)
    }

    /// The cache damaged and the origin serving damaged bytes too: the assembly does not
    /// verify, fails, and nothing is published or left behind.
    @Test func anAssemblyThatDoesNotVerifyIsDiscarded() async throws {
        let setup = try Self.setUp()
        for pack in setup.mounted.packs { try Self.damage(setup.store.path(of: pack)) }
        try Self.damage(setup.root.path + "/r2-dist/" + setup.pack.file)
        let error = await #expect(throws: FetchError.self) {
            try await setup.assembler.assemble(setup.pack, plan: setup.plan)
        }
        #expect(error?.kind == .corrupt || error?.kind == .localIO, "\(String(describing: error))")
        #expect(!FileManager.default.fileExists(atPath: setup.store.path(of: setup.pack)))
        #expect(Self.temporaryFiles(of: setup.store).isEmpty)
    }
}
