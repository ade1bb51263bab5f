import Logging
import Synchronization

/// Keeps every log record in memory so a test can check the access log (and that no
/// secret ever reached it).
public final class LogCapture: Sendable {
    public struct Record: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]

        /// Everything the record would print, for "never contains" checks.
        public var text: String {
            ([message] + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        }
    }

    private let storage = Mutex<[Record]>([])

    public init() {}

    public var records: [Record] { storage.withLock { $0 } }

    public func append(_ record: Record) {
        storage.withLock { $0.append(record) }
    }

    public var logger: Logger {
        Logger(label: "test") { _ in Handler(capture: self) }
    }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            capture.append(Record(level: event.level, message: "\(event.message)",
                                  metadata: merged.mapValues { "\($0)" }))
        }
    }
}
