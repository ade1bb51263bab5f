import ArgumentParser
import Foundation
import Logging

/// `--log-level`, shared by the commands that log. `ODRFS_LOG_LEVEL` sets the default.
struct LoggingOptions: ParsableArguments {
    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error or critical.")
    var logLevel: String = ProcessInfo.processInfo.environment["ODRFS_LOG_LEVEL"] ?? "info"

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("unknown log level '\(logLevel)'; use trace, debug, info, notice, warning, error or critical")
        }
    }

    /// Bootstraps swift-log once for this process (logs go to stderr) and returns a logger.
    func makeLogger(label: String) -> Logger {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: label)
    }
}
