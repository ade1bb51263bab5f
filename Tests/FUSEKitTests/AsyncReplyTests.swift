@testable import FUSEKit
import Foundation
import Testing
import TestSupport

/// Deferred replies, interrupts, dropped requests and teardown on a real mount.
@Suite(.serialized, .timingSensitive, .enabled(if: MountEnvironment.hasFuseDevice, "/dev/fuse is missing: mount tests skipped"), .timeLimit(.minutes(1)))
struct AsyncReplyTests {
    @Test func deferredOpenDoesNotBlockOtherRequests() async throws {
        try await withTestMount { mount in
            mount.fileSystem.events.withLock { $0.holdSlowOpen = true }
            let cat = try RunningTool("/usr/bin/cat", [mount.path("slow.txt")])
            #expect(await waitUntil(timeout: 5) { mount.fileSystem.events.withLock { $0.slowOpenArrived } })
            // The open is held unanswered, so this stat can only finish if nothing blocks on it.
            let started = Date()
            let other = await runTool("/usr/bin/stat", ["-c", "%s", mount.path("dir/nested.txt")])
            let elapsed = Date().timeIntervalSince(started)
            #expect(other.stdout == "7\n")
            // The open is held until the test lets it go: blocked, the stat would never end;
            // 10 s leaves a loaded machine its margin.
            #expect(elapsed < 10, "stat took \(elapsed) s while an open was pending")
            #expect(mount.fileSystem.events.withLock { !$0.slowOpenAnswered })
            #expect(mount.session.pendingDeferredRequestCount == 1)
            mount.fileSystem.events.withLock { $0.holdSlowOpen = false }
            let result = await cat.wait(timeout: 10)
            #expect(result.succeeded, "\(result.stderr)")
            #expect(result.stdout == "slow but steady\n")
            #expect(mount.session.pendingDeferredRequestCount == 0)
        }
    }

    @Test(arguments: [SIGINT, SIGKILL])
    func interruptReleasesAnOpenThatNeverCompletes(signal: Int32) async throws {
        try await withTestMount { mount in
            let cat = try await mount.catWaitingInHangingOpen()
            cat.signal(signal)
            let result = await cat.wait(timeout: 5)
            #expect(!result.timedOut, "cat must exit once interrupted")
            #expect(mount.fileSystem.events.withLock { $0.interruptHandlerRan })
            #expect(mount.session.pendingDeferredRequestCount == 0)
        }
    }

    @Test func droppedRequestsAnswerIOError() async throws {
        try await withTestMount { mount in
            let dropped = await runTool("/usr/bin/cat", [mount.path("drop.txt")])
            #expect(dropped.stderr.contains("Input/output error"), "\(dropped.stderr)")
            let lost = await runTool("/usr/bin/cat", [mount.path("lost.txt")])
            #expect(lost.stderr.contains("Input/output error"), "\(lost.stderr)")
        }
    }

    @Test func teardownAnswersPendingDeferredRequests() async throws {
        let mount = try TestMount()
        let cat = try await mount.catWaitingInHangingOpen()
        #expect(mount.session.pendingDeferredRequestCount == 1)
        await mount.stop()
        let result = await cat.wait(timeout: 5)
        #expect(!result.timedOut)
        #expect(result.status != 0)
        #expect(mount.session.isTornDown)
        #expect(mount.fileSystem.events.withLock { $0.destroyed })
    }

    @Test func externalUnmountEndsTheLoop() async throws {
        let mount = try TestMount()
        #expect(await runTool("/usr/bin/cat", [mount.path("hello.txt")]).stdout == "Hello, FUSE!\n")
        let unmount = await runTool("/usr/bin/fusermount3", ["-u", mount.directory])
        #expect(unmount.succeeded, "\(unmount.stderr)")
        #expect(await mount.waitForLoopEnd(timeout: 10), "run() must return after fusermount3 -u")
        #expect(mount.session.isTornDown)
        await mount.stop()
    }

    @Test func exitFlagAloneStopsTheLoop() async throws {
        let mount = try TestMount()
        // What a SIGTERM handled on another thread does: only the flag is set.
        mount.session.exitLikeASignalHandler()
        #expect(await mount.waitForLoopEnd(timeout: 5), "the exit watcher must wake the loop")
        #expect(mount.session.isTornDown)
        await mount.stop()
    }

    @Test func manyParallelReadersAllSucceed() async throws {
        try await withTestMount { mount in
            let reference = mount.directory + ".reference"
            _ = FileManager.default.createFile(atPath: reference, contents: Data(TestMount.bigContents))
            defer { unlink(reference) }
            let script = """
                pids=""
                for i in $(seq 16); do
                    cmp '\(reference)' '\(mount.path("big.bin"))' & pids="$pids $!"
                    cat '\(mount.path("slow.txt"))' >/dev/null & pids="$pids $!"
                done
                fail=0; for pid in $pids; do wait $pid || fail=1; done; exit $fail
                """
            let result = await runTool("/bin/sh", ["-c", script], timeout: 30)
            #expect(result.succeeded, "\(result.stdout)\(result.stderr)")
            #expect(mount.session.pendingDeferredRequestCount == 0)
        }
    }

    @Test func signalHandlersEndTheLoopAndAreRemovedAfterwards() async throws {
        // A daemon started from a script may inherit SIGINT ignored; installSignalHandlers must still take it.
        var original = sigaction()
        sigaction(SIGINT, nil, &original)
        defer { sigaction(SIGINT, &original, nil) }
        _ = signal(SIGINT, SIG_IGN)
        let mount = try TestMount(installSignalHandlers: true)
        var installed = sigaction()
        sigaction(SIGINT, nil, &installed)
        #expect(unsafeBitCast(installed.__sigaction_handler.sa_handler, to: Int.self) > 1, "a real handler, not SIG_DFL/SIG_IGN")
        // The loop thread, like every thread started from the test runner, blocks
        // signals: as in a daemon whose signals land on the main thread, the
        // handler runs elsewhere and the exit watcher must wake the loop.
        let target = LockedBox<pthread_t?>(nil)
        let done = LockedBox(false)
        let receiver = Thread {
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGTERM)
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            target.value = pthread_self()
            while !done.value { usleep(2_000) }
        }
        receiver.start()
        defer { done.value = true }
        #expect(await waitUntil(timeout: 5) { target.value != nil })
        if let thread = target.value {
            pthread_kill(thread, SIGTERM)
        }
        #expect(await mount.waitForLoopEnd(timeout: 5), "SIGTERM must end run()")
        #expect(mount.session.isTornDown)
        var after = sigaction()
        sigaction(SIGTERM, nil, &after)
        #expect(after.__sigaction_handler.sa_handler == nil, "handlers removed at teardown (SIG_DFL)")
        await mount.stop()
    }

    @Test func exitBeforeRunMakesRunReturnAtOnce() async throws {
        let mount = try TestMount(exitBeforeRun: true)
        #expect(await mount.waitForLoopEnd(timeout: 5))
        #expect(mount.session.isTornDown)
        await mount.stop()
    }
}
