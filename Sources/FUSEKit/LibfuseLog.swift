import CFuse3
import Glibc
import Logging
import Synchronization

/// Routes libfuse's own messages (`fuse_log`) into swift-log instead of
/// stderr, and lets setup calls capture libfuse's error text so `FUSEError`
/// can quote it: a daemon's stderr is often /dev/null, and "mount failed"
/// alone says nothing.
///
/// libfuse's log function is process-global; the most recently created
/// session's logger receives the messages. libfuse sometimes prints one line
/// in several calls, so text is buffered per thread until a newline.
enum LibfuseLog {
    private struct State {
        var logger: Logger?
        /// Unfinished lines, per calling thread.
        var partialLines: [pthread_t: String] = [:]
        /// Error text captured for threads inside `capturingErrors`.
        var captures: [pthread_t: String] = [:]
    }

    private static let state = Mutex(State())

    /// Makes `logger` the destination and installs the C callback (idempotent).
    static func install(logger: Logger) {
        state.withLock { $0.logger = logger }
        fuse_set_log_func(logCallback)
    }

    /// Runs `body` and returns the error-level text libfuse logged on this thread meanwhile.
    static func capturingErrors<Result>(_ body: () -> Result) -> (result: Result, errors: String?) {
        let thread = pthread_self()
        state.withLock { $0.captures[thread] = "" }
        let result = body()
        let captured = state.withLock { $0.captures.removeValue(forKey: thread) } ?? ""
        let trimmed = captured.split(separator: "\n").joined(separator: "; ")
        return (result, trimmed.isEmpty ? nil : trimmed)
    }

    static func emit(_ level: fuse_log_level, _ text: String) {
        let thread = pthread_self()
        let (logger, line) = state.withLock { state -> (Logger?, String?) in
            if level.rawValue <= FUSE_LOG_ERR.rawValue, state.captures[thread] != nil {
                state.captures[thread]! += text
            }
            let pending = (state.partialLines[thread] ?? "") + text
            guard pending.hasSuffix("\n") else {
                state.partialLines[thread] = pending
                return (state.logger, nil)
            }
            state.partialLines[thread] = nil
            return (state.logger, String(pending.dropLast()))
        }
        guard let logger, let line else { return }
        logger.log(level: swiftLevel(level), "libfuse: \(line)", metadata: ["fuse.source": "libfuse"])
    }

    private static func swiftLevel(_ level: fuse_log_level) -> Logger.Level {
        switch level {
        case FUSE_LOG_DEBUG: .debug
        case FUSE_LOG_INFO: .info
        case FUSE_LOG_NOTICE: .notice
        case FUSE_LOG_WARNING: .warning
        default: .error
        }
    }
}

/// The C log callback: formats the message and hands it to `LibfuseLog`.
private let logCallback: fuse_log_func_t = { level, format, arguments in
    guard let format, let arguments else { return }
    var buffer = [CChar](repeating: 0, count: 1024)
    let length = vsnprintf(&buffer, buffer.count, format, arguments)
    let count = min(max(0, Int(length)), buffer.count - 1)
    let text = buffer.prefix(count).withUnsafeBufferPointer { characters in
        String(decoding: UnsafeRawBufferPointer(characters), as: UTF8.self)
    }
    LibfuseLog.emit(level, text)
}
