@testable import FUSEKit
import Foundation
import Testing
import TestSupport

/// FUSE over io_uring under libfuse 3.14 (CFuseRing): requests arrive through ring
/// entries, libfuse dispatches them, replies are committed back into the ring.
/// Needs Linux 6.14+ with CONFIG_FUSE_IO_URING and root (to set fuse.enable_uring).
@Suite(.serialized, .timingSensitive, .enabled(if: MountEnvironment.hasFuseDevice, "/dev/fuse is missing: mount tests skipped"), .timeLimit(.minutes(1)))
struct IOUringTests {
    static var kernelHasIOUring: Bool { FileManager.default.fileExists(atPath: KernelIOUringSupport.parameterPath) }

    /// The ring tests run where the kernel offers FUSE over io_uring, and always in CI
    /// (`CI=true`), where a missing ring fails them; elsewhere they are skipped, with this reason.
    static var ringTestsRun: Bool {
        if !kernelHasIOUring && !MountEnvironment.isCI {
            print("⚠️  SKIPPING io_uring tests: \(ringMissingReason). In CI these tests fail instead of skipping.")
            return false
        }
        return true
    }

    static let ringMissingReason = "this kernel has no FUSE over io_uring (\(KernelIOUringSupport.parameterPath) missing: Linux 6.14+ with CONFIG_FUSE_IO_URING)"

    /// Waits for the ring to be active. A test that gets here must have it: a ring that does
    /// not come up is a failure, never a quiet return.
    static func waitForRing(_ mount: TestMount) async -> Bool {
        let active = await waitUntil(timeout: 5) { mount.session.transport.isActive }
        if !active {
            Issue.record("io_uring did not become active\(kernelHasIOUring ? "" : " (CI=true: \(ringMissingReason))"): \(mount.session.transport)")
        }
        return active
    }

    @Test(.enabled(if: ringTestsRun, Comment(rawValue: ringMissingReason))) func realToolsReadEverythingThroughTheRing() async throws {
        try await withTestMount(ioUring: true) { mount in
            guard await Self.waitForRing(mount) else { return }
            let before = mount.session.ioUringRequestCount
            #expect(await runTool("/usr/bin/cat", [mount.path("hello.txt")]).stdout == "Hello, FUSE!\n")
            #expect(await runTool("/usr/bin/cat", [mount.path("dir/nested.txt")]).stdout == "nested\n")
            #expect(await runTool("/usr/bin/readlink", [mount.path("link")]).stdout == "hello.txt\n")
            let listing = await runTool("/usr/bin/ls", ["-1", mount.path("many")], timeout: 20)
            #expect(listing.stdout.split(separator: "\n").count == TestFileSystem.manyCount)
            let found = await runTool("/usr/bin/find", [mount.directory, "-name", "nested.txt"], timeout: 20)
            #expect(found.stdout == mount.path("dir/nested.txt") + "\n", "\(found.stderr)")
            let value = await runTool("/usr/bin/getfattr", ["-n", "user.test", "--only-values", mount.path("hello.txt")])
            #expect(value.stdout == "value", "\(value.stderr)")
            let reference = mount.directory + ".reference"
            _ = FileManager.default.createFile(atPath: reference, contents: Data(TestMount.bigContents))
            defer { unlink(reference) }
            let compare = await runTool("/usr/bin/cmp", [reference, mount.path("big.bin")], timeout: 20)
            #expect(compare.succeeded, "\(compare.stdout)\(compare.stderr)")
            // Every one of those went through the ring, not /dev/fuse.
            #expect(mount.session.ioUringRequestCount > before + 10, "\(mount.session.ioUringRequestCount - before) ring requests")
        }
    }

    @Test(.enabled(if: ringTestsRun, Comment(rawValue: ringMissingReason))) func deferredRepliesAndInterruptsWorkThroughTheRing() async throws {
        try await withTestMount(ioUring: true) { mount in
            guard await Self.waitForRing(mount) else { return }
            // Answered later from a dispatch queue: the reply finds its ring entry by unique.
            let slow = await runTool("/usr/bin/cat", [mount.path("slow.txt")], timeout: 10)
            #expect(slow.stdout == "slow but steady\n", "\(slow.stderr)")
            // Answered only on interrupt: INTERRUPT comes on /dev/fuse, the reply goes to the ring.
            let cat = try await mount.catWaitingInHangingOpen()
            cat.signal(SIGINT)
            let result = await cat.wait(timeout: 5)
            #expect(!result.timedOut, "cat must exit once interrupted")
            #expect(mount.fileSystem.events.withLock { $0.interruptHandlerRan })
            // The ring still serves after that.
            #expect(await runTool("/usr/bin/cat", [mount.path("hello.txt")]).stdout == "Hello, FUSE!\n")
        }
    }

    @Test(.enabled(if: ringTestsRun, Comment(rawValue: ringMissingReason))) func passthroughOpensWorkThroughTheRing() async throws {
        try await withTestMount(passthrough: true, ioUring: true) { mount in
            guard await Self.waitForRing(mount) else { return }
            #expect(await waitUntil(timeout: 5) { mount.session.passthrough.status == .available })
            // The open reply carrying FOPEN_PASSTHROUGH and the backing id is committed through the ring.
            await mount.expectPassthroughReadAndMap()
        }
    }

    @Test(.enabled(if: ringTestsRun, Comment(rawValue: ringMissingReason))) func teardownWithARequestPendingDoesNotHang() async throws {
        let mount = try TestMount(ioUring: true)
        guard await Self.waitForRing(mount) else {
            await mount.stop()
            return
        }
        let cat = try await mount.catWaitingInHangingOpen()
        await mount.stop()
        let result = await cat.wait(timeout: 5)
        #expect(!result.timedOut)
        #expect(mount.session.transport == .stopped)
    }

    @Test func withoutTheModuleParameterTheMountFallsBackAndSaysWhy() async throws {
        let mount = try TestMount(ioUring: true, ioUringParameter: "/nonexistent/enable_uring")
        let status = mount.session.transport
        guard case .unavailable(let reason) = status else {
            Issue.record("expected unavailable, got \(status)")
            await mount.stop()
            return
        }
        #expect(reason.contains("CONFIG_FUSE_IO_URING"))
        #expect(mount.session.transport.description.hasPrefix("/dev/fuse (io_uring unavailable"))
        #expect(await runTool("/usr/bin/cat", [mount.path("hello.txt")]).stdout == "Hello, FUSE!\n")
        #expect(mount.session.ioUringRequestCount == 0)
        await mount.stop()
    }

    @Test func requestingAfterMountIsRefused() async throws {
        try await withTestMount { mount in
            let status = mount.session.requestIOUring()
            #expect(status == .unavailable("requested after mount; the kernel had already sent INIT"))
            #expect(await runTool("/usr/bin/cat", [mount.path("hello.txt")]).stdout == "Hello, FUSE!\n")
        }
    }

    @Test func notRequestedMeansDevFuse() async throws {
        try await withTestMount { mount in
            #expect(await runTool("/usr/bin/cat", [mount.path("hello.txt")]).stdout == "Hello, FUSE!\n")
            #expect(mount.session.transport == .notRequested)
            #expect(mount.session.transport.description == "/dev/fuse")
        }
    }
}
