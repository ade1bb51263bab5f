import Foundation
import TestSupport

/// An HTTP origin (a small Python server) that serves a dist dir but, for the files it is
/// told to stall, sends the headers and the first `stallAfter` bytes and then nothing
/// until `release()` — a CDN that stops mid-body, with no hook inside ODRFS.
final class StallingOrigin {
    let port: Int
    let flag: String
    private let process: ChildProcess

    var url: String { "http://127.0.0.1:\(port)/" }

    static let script = """
    import http.server, os, socketserver, sys, time
    root, port, flag, stall_after = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    stalled = set(sys.argv[5:])
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_GET(self):
            path = self.path.split("?")[0].lstrip("/")
            full = os.path.join(root, path)
            if ".." in path.split("/") or not os.path.isfile(full):
                self.send_error(404)
                return
            data = open(full, "rb").read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if path in stalled and not os.path.exists(flag):
                self.wfile.write(data[:stall_after])
                self.wfile.flush()
                open(flag + ".stalling", "w").close()
                while not os.path.exists(flag):
                    time.sleep(0.05)
                self.wfile.write(data[stall_after:])
            else:
                self.wfile.write(data)
        def log_message(self, *args):
            pass
    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True
    server = Server(("127.0.0.1", port), Handler)
    print("serving", flush=True)
    server.serve_forever()
    """

    /// Serves `dist`, stalling the files at the relative paths `stalled`.
    init(serving dist: String, in directory: String, stalled: [String], stallAfter: Int, port: Int) async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.port = port
        flag = directory + "/release-stall"
        let scriptPath = directory + "/stalling_origin.py"
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        let out = directory + "/stalling.out"
        process = try ChildProcess("/usr/bin/python3", [scriptPath, dist, String(port), flag, String(stallAfter)] + stalled,
                                   stdout: out, stderr: directory + "/stalling.err")
        let process = self.process
        let serving = { (try? String(contentsOfFile: out, encoding: .utf8))?.contains("serving") == true }
        guard await eventually(timeout: .seconds(10), { serving() || !process.isRunning }) && serving() else {
            process.stop()
            throw NginxOrigin.NginxError(message: "the stalling origin did not start on port \(port)")
        }
    }

    /// Created when a response first stalls.
    var stallingMarker: String { flag + ".stalling" }

    /// Lets every stalled response (and every later one) send the rest of its body.
    func release() {
        _ = FileManager.default.createFile(atPath: flag, contents: nil)
    }

    deinit {
        process.stop()
    }
}
