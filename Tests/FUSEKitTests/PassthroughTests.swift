import FUSEKit
import Foundation
import Testing
import TestSupport

/// FUSE passthrough negotiated over libfuse 3.14 (FUSEKit patches INIT and OPEN
/// replies): reads and mmap of `big.bin` are served by the kernel from the backing
/// file, so none of them reaches the filesystem's read callback.
@Suite(.serialized, .timingSensitive, .enabled(if: MountEnvironment.hasFuseDevice, "/dev/fuse is missing: mount tests skipped"), .timeLimit(.minutes(1)))
struct PassthroughTests {
    /// Reads every byte with read(2) and through mmap(2), comparing with the source.
    static let readAndMap = """
    import mmap, sys
    path, reference = sys.argv[1], open(sys.argv[2], 'rb').read()
    with open(path, 'rb') as f:
        assert f.read() == reference, 'read(2) bytes differ'
        with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
            assert m[:] == reference, 'mmap bytes differ'
            assert m[len(reference) - 7:] == reference[-7:], 'mmap tail differs'
    print('ok')
    """

    @Test func readsAndMmapBypassTheDaemon() async throws {
        try await withTestMount(passthrough: true) { mount in
            // INIT is answered once the loop runs, a moment after mount returns.
            let negotiated = await waitUntil(timeout: 5) { mount.session.passthrough.status == .available }
            #expect(negotiated, "this kernel (6.9+, CONFIG_FUSE_PASSTHROUGH) offers passthrough; got \(mount.session.passthrough.status)")
            await mount.expectPassthroughReadAndMap()
            // The last release unregisters the inode's backing id.
            #expect(await waitUntil(timeout: 5) { mount.session.passthrough.registeredCount == 0 })
        }
    }

    @Test func withoutPassthroughReadsReachTheDaemon() async throws {
        try await withTestMount { mount in
            #expect(mount.session.passthrough.status == .notRequested)
            let result = await runTool("/usr/bin/cat", [mount.path("big.bin")], timeout: 20)
            #expect(Array(result.stdoutData) == TestMount.bigContents)
            #expect(mount.fileSystem.events.withLock { $0.descriptorReads } > 0)
        }
    }

    @Test func concurrentOpensShareOneBackingID() async throws {
        try await withTestMount(passthrough: true) { mount in
            let holder = try RunningTool("/usr/bin/python3", ["-c", "import sys,time; f=open(sys.argv[1],'rb'); g=open(sys.argv[1],'rb'); print(len(f.read(10))+len(g.read(10)), flush=True); time.sleep(30)", mount.path("big.bin")])
            defer { holder.signal(SIGKILL) }
            #expect(await waitUntil(timeout: 10) { mount.session.passthrough.registeredCount == 1 })
            let cat = await runTool("/usr/bin/cat", [mount.path("big.bin")], timeout: 20)
            #expect(Array(cat.stdoutData) == TestMount.bigContents)
            #expect(mount.session.passthrough.registeredCount == 1)
            holder.signal(SIGKILL)
            _ = await holder.wait(timeout: 5)
            #expect(await waitUntil(timeout: 5) { mount.session.passthrough.registeredCount == 0 })
        }
    }
}
