import Foundation
import TestSupport
import Testing

/// What the HTTP mount tests need from an origin: its URL and the pack requests it saw.
protocol TestOrigin: AnyObject {
    var url: String { get }
    /// Requests for pack files, in order (each entry contains the request path).
    var packRequests: [String] { get }
}

/// The two origins the HTTP tests run against.
enum OriginKind: String, CaseIterable, CustomStringConvertible {
    case nginx
    case odrfsServe = "odrfs serve"

    var description: String { rawValue }

    func start(serving dist: String, in directory: String) async throws -> any TestOrigin {
        try await onFreePort { port in
            switch self {
            case .nginx: return try await NginxOrigin(serving: dist, in: directory + "-\(port)", port: port)
            case .odrfsServe: return try await ServeOrigin(serving: dist, in: directory + "-\(port)", port: port)
            }
        }
    }
}

extension NginxOrigin: TestOrigin {}

/// Runs `start` on random high ports until one is free (another test or program may
/// hold the first one picked); at most five tries.
func onFreePort<T>(_ start: (Int) async throws -> T) async throws -> T {
    var lastError: (any Error)?
    for _ in 0..<5 {
        do {
            return try await start(Int.random(in: 20_000..<60_000))
        } catch {
            lastError = error
        }
    }
    throw lastError!
}

/// `odrfs serve` as a child process, its access log read from its stderr.
final class ServeOrigin: TestOrigin {
    let port: Int
    private let process: ChildProcess
    private let log: String

    var url: String { "http://127.0.0.1:\(port)/" }

    init(serving dist: String, in directory: String, port: Int = Int.random(in: 20_000..<60_000), tokenFile: String? = nil) async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.port = port
        log = directory + "/serve.log"
        var arguments = ["serve", dist, "--port", String(port)]
        if let tokenFile { arguments += ["--token-file", tokenFile] }
        process = try ChildProcess(MountFixture.binary, arguments, stdout: directory + "/serve.out", stderr: log)
        let process = self.process
        let serving = { (try? String(contentsOfFile: directory + "/serve.out", encoding: .utf8))?.contains("Serving") == true }
        // Stop waiting as soon as it exits (e.g. the port is taken): the caller retries.
        let ready = await eventually { serving() || !process.isRunning } && serving()
        if !ready {
            process.stop()
            throw NginxOrigin.NginxError(message: "odrfs serve did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
    }

    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    var packRequests: [String] {
        logText.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "http.path=/packs/") else { return nil }
            return String(line[range.lowerBound...].split(separator: " ")[0])
        }
    }

    deinit {
        process.stop(gracefully: .seconds(10))
    }
}
