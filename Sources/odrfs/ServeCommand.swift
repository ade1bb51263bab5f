import ArgumentParser
import Foundation
import Logging
import ODRFSCore
import ODRFSServer
import ServiceLifecycle

/// `odrfs serve <dist-dir>`: the embedded HTTP origin, until SIGINT or SIGTERM.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a dist dir over HTTP for `odrfs mount` (Range, ETag, bearer token).",
        discussion: """
            Serves the files of a dist dir made by `odrfs build`, nothing outside it. Any static \
            HTTP server or CDN can do the same; this one needs no setup. With --token-file, every \
            request must carry `Authorization: Bearer <first line of the file>`. One log line per \
            request goes to stderr. SIGINT or SIGTERM stops it after in-flight responses finish.

            Example:
              odrfs serve dist --port 8080 --token-file /etc/odrfs/token
              odrfs mount http://127.0.0.1:8080 /mnt/app --token-file /etc/odrfs/token
            """
    )

    @Argument(help: "The dist dir to serve (holds manifest.json).")
    var distDirectory: String

    @Option(name: .long, help: "Address to listen on; 0.0.0.0 for every interface.")
    var host = "127.0.0.1"

    @Option(name: .long, help: "TCP port; 0 picks a free one (the URL printed says which).")
    var port = 8080

    @Option(name: .long, help: "File whose first line is the bearer token clients must send.")
    var tokenFile: String?

    @Option(name: .long, help: "Connections held at once; more wait in the listen backlog. Each costs up to 2 descriptors.")
    var maxConnections = 256

    @Option(name: .long, help: "Seconds a connection may stay idle (or a client may stop reading) before it is closed.")
    var idleTimeout = 60

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        var info = stat()
        guard stat(distDirectory + "/" + Manifest.fileName, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ValidationError("\(distDirectory) has no manifest.json; pass the dist dir made by `odrfs build`")
        }
        guard (0...65535).contains(port) else {
            throw ValidationError("port \(port) is out of range 0…65535")
        }
        guard (1...1_000_000).contains(maxConnections) else {
            throw ValidationError("--max-connections \(maxConnections) is out of range 1…1000000")
        }
        guard (1...86_400).contains(idleTimeout) else {
            throw ValidationError("--idle-timeout \(idleTimeout) is out of range 1…86400 seconds")
        }
    }

    func run() async throws {
        let logger = logging.makeLogger(label: "odrfs.serve")
        let host = self.host
        let server: OriginServer
        do {
            server = try OriginServer(distDirectory: distDirectory, host: host, port: port, tokenFile: tokenFile,
                                      limits: ConnectionLimits(maxConnections: maxConnections,
                                                               idleTimeout: .seconds(idleTimeout)),
                                      logger: logger) { port in
                let shownHost = host.contains(":") ? "[\(host)]" : host
                // Unbuffered, so that a script waiting for the URL sees it at once.
                FileHandle.standardOutput.write(Data("Serving on http://\(shownHost):\(port)/\n".utf8))
            }
        } catch {
            FileHandle.standardError.write(Data("odrfs serve: \(error)\n".utf8))
            throw ExitCode.failure
        }
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: server)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        try await group.run()
    }
}
