import ControlTestSupport
import Foundation
import ODRFSControl
import Testing
import TestSupport

/// SO_PEERCRED: a client of another user is refused even when file permissions let it in.
@Suite(.timingSensitive, .timeLimit(.minutes(1))) struct PeerCredentialTests {
    @Test(.enabled(if: geteuid() == 0, "needs root to run a client as nobody"))
    func anotherUserIsRefused() async throws {
        // A socket of its own (not under the shared /run/odrfs), so opening its door on
        // purpose — so that only the credential check stands in the way — affects no
        // other test.
        let place = try TemporaryDirectory()
        let fixture = try ControlFixture(socketPath: place.path + "/rt/d/control.sock")
        for path in [place.path, place.path + "/rt", place.path + "/rt/d"] { chmod(path, 0o755) }
        chmod(fixture.socketPath, 0o666)
        let output = try TemporaryDirectory()
        chmod(output.path, 0o777)
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(sys.argv[1])
            data = b""
            try:
                s.sendall(b'{"v":1,"id":1,"op":"status"}\\n')
            except OSError:
                pass  # the daemon may hang up before reading
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk: break
                    data += chunk
            except OSError:
                pass
            sys.stdout.write(data.decode() + "EOF\\n")
            """
        let child = try ChildProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, fixture.socketPath],
                                     stdout: output.path + "/out", stderr: output.path + "/err")
        #expect(await exited(child, within: .seconds(20)))
        let text = (try? String(contentsOfFile: output.path + "/out", encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: output.path + "/err", encoding: .utf8)) ?? ""
        #expect(child.terminationStatus == 0, "\(errors)")
        let lines = text.split(separator: "\n")
        #expect(lines.last == "EOF")                  // the daemon hung up
        #expect(lines.count == 2, "\(text)")          // after exactly one line: the refusal
        let reply = try ControlProtocol.decodeResponse(Data(lines.first.map(String.init)?.utf8 ?? "".utf8))
        #expect(reply.error?.code == .permissionDenied)
        #expect(fixture.service.beginCount == 0)
        await fixture.stop()
    }
}
