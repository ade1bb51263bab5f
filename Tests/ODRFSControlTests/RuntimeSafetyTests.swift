import ControlTestSupport
import Foundation
import Logging
@testable import ODRFSControl
import Testing
import TestSupport

/// Issue 12 defect 6: runtime files in a world-writable place. The daemon refuses a
/// directory another user prepared, a symlink or open permissions; the client refuses
/// a listener of an unexpected user.
@Suite(.timingSensitive, .timeLimit(.minutes(1))) struct RuntimeSafetyTests {
    /// `<tmp>/base/mount`, as `/tmp/odrfs-<uid>/<hash>` would be.
    struct Layout {
        let root: TemporaryDirectory
        var base: String { root.path + "/base" }
        var runtime: RuntimeDirectory { RuntimeDirectory(path: base + "/mount") }
        init() throws { root = try TemporaryDirectory() }
    }

    func refusal(_ body: () throws(ControlError) -> Void) -> ControlError? {
        do {
            try body()
            return nil
        } catch {
            return error
        }
    }

    @Test func freshDirectoriesAreCreatedPrivate() throws {
        let layout = try Layout()
        try layout.runtime.create()
        try layout.runtime.writePID()
        var info = stat()
        for path in [layout.base, layout.runtime.path] {
            #expect(lstat(path, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o700, "\(path)")
        }
        #expect(lstat(layout.runtime.pidFile, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(layout.runtime.daemonPID() == getpid())
    }

    /// A mount shared with every user (issue 25 item 4): others may enter, never write.
    @Test func sharedDirectoriesLetOthersInButNeverWrite() throws {
        let layout = try Layout()
        let shared = RuntimeDirectory(path: layout.base + "/mount", shared: true)
        try shared.create()
        var info = stat()
        for path in [layout.base, shared.path] {
            #expect(lstat(path, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o755, "\(path)")
        }
        // A private one of ours is opened up; one others may write in is refused.
        let again = try Layout()
        #expect(mkdir(again.base, 0o700) == 0)
        try RuntimeDirectory(path: again.base + "/mount", shared: true).create()
        #expect(lstat(again.base, &info) == 0 && info.st_mode & 0o777 == 0o755)
        for mode: mode_t in [0o775, 0o757, 0o777] {
            let open = try Layout()
            #expect(mkdir(open.base, 0o700) == 0 && chmod(open.base, mode) == 0)
            let error = refusal { () throws(ControlError) in try RuntimeDirectory(path: open.base + "/mount", shared: true).create() }
            #expect(error?.code == .permissionDenied, "mode \(String(mode, radix: 8))")
        }
        // Who may do what on a shared mount.
        let access = ControlAccess.everyLocalUser(owner: 1000)
        #expect(access.mayConnect(65534) && !access.mayChange(65534))
        #expect(access.mayChange(1000) && access.mayChange(0))
        #expect(!ControlAccess.ownerOnly(1000).mayConnect(65534))
        #expect(ControlOperation.purge(tags: nil).changesTheMount && ControlOperation.update(check: true).changesTheMount)
        #expect(!ControlOperation.status.changesTheMount && !ControlOperation.watchEvents.changesTheMount)
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to chown to another user"))
    func directoryOfAnotherUserIsRefused() throws {
        let layout = try Layout()
        #expect(mkdir(layout.base, 0o700) == 0)
        #expect(chown(layout.base, 65534, 65534) == 0)
        let error = refusal { () throws(ControlError) in try layout.runtime.create() }
        #expect(error?.code == .permissionDenied)
        #expect(error?.message.contains("owned by uid 65534") == true, "\(String(describing: error))")
        // The daemon's server refuses it too, before creating anything inside.
        let server = ControlServer(socketPath: layout.runtime.controlSocket, service: FakeControlService(), logger: Logger(label: "test"))
        #expect(refusal { () throws(ControlError) in try server.start() }?.code == .permissionDenied)
        #expect(access(layout.runtime.path, F_OK) != 0)
    }

    @Test func groupOrOtherPermissionBitsAreRefused() throws {
        for mode: mode_t in [0o755, 0o710, 0o701, 0o770] {
            let layout = try Layout()
            #expect(mkdir(layout.base, 0o700) == 0)
            #expect(chmod(layout.base, mode) == 0)
            let error = refusal { () throws(ControlError) in try layout.runtime.create() }
            #expect(error?.code == .permissionDenied, "mode \(String(mode, radix: 8))")
            #expect(error?.message.contains("must be 700") == true, "\(String(describing: error))")
        }
        // The inner directory is held to the same rule.
        let layout = try Layout()
        #expect(mkdir(layout.base, 0o700) == 0)
        #expect(mkdir(layout.runtime.path, 0o700) == 0 && chmod(layout.runtime.path, 0o777) == 0)
        #expect(refusal { () throws(ControlError) in try layout.runtime.create() }?.code == .permissionDenied)
    }

    @Test func symlinkedDirectoriesAreRefused() throws {
        let layout = try Layout()
        let elsewhere = layout.root.path + "/elsewhere"
        #expect(mkdir(elsewhere, 0o700) == 0)
        #expect(symlink(elsewhere, layout.base) == 0)
        let error = refusal { () throws(ControlError) in try layout.runtime.create() }
        #expect(error?.code == .permissionDenied)
        #expect(error?.message.contains("symbolic link") == true, "\(String(describing: error))")
        #expect(access(elsewhere + "/mount", F_OK) != 0)   // nothing was created through it

        let inner = try Layout()
        #expect(mkdir(inner.base, 0o700) == 0)
        #expect(symlink(elsewhere, inner.runtime.path) == 0)
        #expect(refusal { () throws(ControlError) in try inner.runtime.create() }?.message.contains("symbolic link") == true)
    }

    @Test func symlinksAtThePidFileAndSocketAreRefused() throws {
        let layout = try Layout()
        try layout.runtime.create()
        let target = layout.root.path + "/victim"
        #expect(symlink(target, layout.runtime.pidFile) == 0)
        #expect(refusal { () throws(ControlError) in try layout.runtime.writePID() }?.code == .permissionDenied)
        #expect(access(target, F_OK) != 0)   // not written through the link
        #expect(layout.runtime.daemonPID() == nil)

        #expect(symlink(target, layout.runtime.controlSocket) == 0)
        let server = ControlServer(socketPath: layout.runtime.controlSocket, service: FakeControlService(), logger: Logger(label: "test"))
        let error = refusal { () throws(ControlError) in try server.start() }
        #expect(error?.message.contains("symbolic link") == true, "\(String(describing: error))")
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to chown to another user"))
    func pidFilesAndSocketsOfAnotherUserOrKindAreRefused() throws {
        let layout = try Layout()
        try layout.runtime.create()
        // A pid file someone else wrote names no daemon of ours.
        #expect(FileManager.default.createFile(atPath: layout.runtime.pidFile, contents: Data("\(getpid())\n".utf8)))
        #expect(layout.runtime.daemonPID() == getpid())
        #expect(chown(layout.runtime.pidFile, 65534, 65534) == 0)
        #expect(layout.runtime.daemonPID() == nil)
        #expect(refusal { () throws(ControlError) in try layout.runtime.writePID() }?.message.contains("owned by uid 65534") == true)
        // A regular file where the socket goes is not replaced.
        #expect(FileManager.default.createFile(atPath: layout.runtime.controlSocket, contents: Data()))
        let server = ControlServer(socketPath: layout.runtime.controlSocket, service: FakeControlService(), logger: Logger(label: "test"))
        #expect(refusal { () throws(ControlError) in try server.start() }?.message.contains("not a socket") == true)
    }

    @Test func theClientChecksWhoListens() throws {
        let socket = "/tmp/x.sock"
        #expect(refusal { () throws(ControlError) in try ControlClient.verifyServer(uid: 0, expected: [1000, 0], socketPath: socket) } == nil)
        #expect(refusal { () throws(ControlError) in try ControlClient.verifyServer(uid: 1000, expected: [1000, 0], socketPath: socket) } == nil)
        let impostor = refusal { () throws(ControlError) in try ControlClient.verifyServer(uid: 1001, expected: [1000, 0], socketPath: socket) }
        #expect(impostor?.code == .permissionDenied)
        #expect(impostor?.message.contains("served by uid 1001") == true)
        #expect(refusal { () throws(ControlError) in try ControlClient.verifyServer(uid: nil, expected: [0], socketPath: socket) }?.code == .permissionDenied)
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to listen as another user"))
    func aListenerOfAnotherUserIsRefused() async throws {
        let place = try TemporaryDirectory()
        chmod(place.path, 0o777)
        let socketPath = place.path + "/control.sock"
        let script = """
            import socket, sys, time
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(sys.argv[1])
            s.listen(8)
            time.sleep(30)
            """
        let listener = try ChildProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, socketPath])
        defer { listener.stop() }
        #expect(await eventually(.seconds(10)) { access(socketPath, F_OK) == 0 })
        do {
            _ = try await ControlClient.connect(socketPath: socketPath)
            Issue.record("connected to another user's listener")
        } catch {
            #expect(error.code == .permissionDenied)
            #expect(error.message.contains("served by uid 65534"), "\(error.message)")
        }
        // The same socket is usable when its user is the expected one: it was the
        // check, not the connect, that refused.
        let allowed = try await ControlClient.connect(socketPath: socketPath, expectedServerUIDs: [65534])
        allowed.close()
    }
}

/// A client finds a shared mount's socket even when the mount table it read missed the
/// mount (mountinfo read while other mounts came and went: CI once failed `odrfs status`
/// as another user that way).
@Suite struct SharedSocketFallbackTests {
    @Test func aSharedSocketIsFoundWithoutTheMountTableEntry() throws {
        try #require(geteuid() == 0, "the shared runtime directory is root's")
        let mountpoint = "/nonexistent/odrfs-test-" + String(UInt64.random(in: .min ... .max), radix: 16)
        #expect(!RuntimeDirectory(clientOfMountpoint: mountpoint).isShared, "no socket anywhere: the caller's own directory")
        let shared = RuntimeDirectory(sharedMountpoint: mountpoint)
        try shared.create()   // as a daemon does: the modes it checks
        defer { try? FileManager.default.removeItem(atPath: shared.path) }
        #expect(FileManager.default.createFile(atPath: shared.controlSocket, contents: Data()))
        let found = RuntimeDirectory(clientOfMountpoint: mountpoint)
        #expect(found.isShared && found.controlSocket == shared.controlSocket)
    }
}
