import Foundation
import TestSupport

/// A forward proxy (a small Python server) that tunnels `CONNECT host:port`, forwards
/// absolute-form requests (`GET http://host:port/path`, one per connection) and logs each
/// request line: what `--proxy` goes through. Started as a child, stopped by PID.
final class LoggingProxy {
    let port: Int
    let log: String
    private let process: ChildProcess

    var url: String { "http://127.0.0.1:\(port)" }
    var requestLines: [String] { ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }

    static let script = """
    import socket, sys, threading
    port, log = int(sys.argv[1]), open(sys.argv[2], "a")
    def pipe(a, b):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                b.sendall(d)
        except OSError:
            pass
        finally:
            try:
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass
    def handle(c):
        data = b""
        while b"\\r\\n\\r\\n" not in data:
            chunk = c.recv(4096)
            if not chunk:
                return
            data += chunk
        line = data.split(b"\\r\\n")[0].decode()
        log.write(line + "\\n"); log.flush()
        method, target = line.split(" ")[:2]
        if method != "CONNECT" and target.startswith("http://"):
            authority, _, path = target[len("http://"):].partition("/")
            host, _, p = authority.rpartition(":") if ":" in authority else (authority, "", "80")
            head, _, body = data.partition(b"\\r\\n\\r\\n")
            kept = [h for h in head.split(b"\\r\\n")[1:] if not h.lower().startswith((b"proxy-", b"connection:"))]
            u = socket.create_connection((host, int(p)))
            u.sendall(b"\\r\\n".join([f"{method} /{path} HTTP/1.1".encode()] + kept + [b"Connection: close"]) + b"\\r\\n\\r\\n" + body)
            pipe(u, c)
            c.close(); return
        if method != "CONNECT":
            c.sendall(b"HTTP/1.1 405 Method Not Allowed\\r\\nContent-Length: 0\\r\\n\\r\\n"); c.close(); return
        host, p = target.rsplit(":", 1)
        u = socket.create_connection((host, int(p)))
        c.sendall(b"HTTP/1.1 200 Connection established\\r\\n\\r\\n")
        threading.Thread(target=pipe, args=(u, c), daemon=True).start()
        pipe(c, u)
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(64)
    print("serving", flush=True)
    while True:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()
    """

    init(in directory: String, port: Int) async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.port = port
        log = directory + "/proxy.log"
        let scriptPath = directory + "/connect_proxy.py"
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let out = directory + "/proxy.out"
        process = try ChildProcess("/usr/bin/python3", [scriptPath, String(port), log], stdout: out, stderr: directory + "/proxy.err")
        let process = self.process
        let serving = { (try? String(contentsOfFile: out, encoding: .utf8))?.contains("serving") == true }
        guard await eventually(timeout: .seconds(10), { serving() || !process.isRunning }) && serving() else {
            process.stop()
            throw NginxOrigin.NginxError(message: "the logging proxy did not start on port \(port)")
        }
    }

    deinit {
        process.stop()
    }
}
