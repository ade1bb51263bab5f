import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
@testable import ODRFSMount
import ODRFSStore
import TestSupport
import Testing

/// A mount's first manager is built before its file index arrives (issue 28, session 16):
/// its trace session begins only once the revision is served, so a mount that fails
/// before that leaves no empty session behind (each new one pushes the oldest out).
@Suite struct TraceSessionStartTests {
    let bundle = SyntheticBundle(packContents: [
        (.base, SyntheticBundle.bytes(100, seed: 1)),
        (PackID("Level1"), SyntheticBundle.bytes(5_000, seed: 2)),
    ])

    func manager(store: PackStore, beginning: Bool) throws -> ResourceManager {
        let logger = Logger(label: "test")
        let downloader = PackDownloader(origin: FakeOrigin(files: bundle.files), store: store, chunkSize: bundle.manifest.chunkSize, logger: logger)
        return try ResourceManager(manifest: bundle.manifest, store: store, downloader: downloader, logger: logger, beginningTrace: beginning)
    }

    @Test func aManagerMadeWithoutATraceBeginsItOnce() async throws {
        let cache = try TemporaryDirectory()
        let store = try PackStore(root: cache.path, logger: Logger(label: "test"))
        let first = try manager(store: store, beginning: true)
        let firstSession = try #require(first.recorder.session)
        // Built, never served: no session, and accesses noted meanwhile are not recorded.
        let unserved = try manager(store: store, beginning: false)
        #expect(unserved.recorder.session == nil)
        unserved.noteAccess(PackNumber(1), cause: .open, file: "level1/a")
        // A later manager's session follows the first one directly.
        let served = try manager(store: store, beginning: false)
        served.beginTraceSession(now: Date())
        let session = try #require(served.recorder.session)
        #expect(session == firstSession + 1, "a manager that was never served began a session")
        served.beginTraceSession(now: Date())
        #expect(served.recorder.session == session, "a second begin started another session")
    }
}
