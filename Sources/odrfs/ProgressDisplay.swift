import Foundation

/// Shows a request's progress: a redrawn bar with bytes, rate and ETA on a terminal,
/// a plain line per 10 % otherwise (logs, pipes, CI).
final class ProgressDisplay: @unchecked Sendable {
    private let output: FileHandle
    private let isTerminal: Bool
    private let linesWhenNotTerminal: Bool
    private let started = Date()
    private let lock = NSLock()
    // GUARDED_BY(lock)
    private var lastDecile = -1
    private var lastDraw = Date.distantPast
    private var drewBar = false

    /// - Parameters:
    ///   - output: stdout for `odrfs request`, stderr where stdout carries results.
    ///   - linesWhenNotTerminal: print a line per 10 % when not on a terminal (else stay quiet).
    init(output: FileHandle = .standardOutput, linesWhenNotTerminal: Bool = true) {
        self.output = output
        self.isTerminal = isatty(output.fileDescriptor) == 1
        self.linesWhenNotTerminal = linesWhenNotTerminal
    }

    func update(completed: Int64, total: Int64) {
        lock.withLock {
            guard total > 0 else { return }
            let fraction = min(Double(completed) / Double(total), 1)
            if isTerminal {
                guard Date().timeIntervalSince(lastDraw) >= 0.1 || completed >= total else { return }
                lastDraw = Date()
                drewBar = true
                let elapsed = max(Date().timeIntervalSince(started), 0.001)
                let rate = Double(completed) / elapsed
                let eta = rate > 0 ? Double(total - completed) / rate : 0
                let width = 30
                let filled = Int(fraction * Double(width))
                let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
                let line = "\r[\(bar)] \(String(format: "%3d", Int(fraction * 100)))%  \(Self.bytes(completed))/\(Self.bytes(total))  \(Self.bytes(Int64(rate)))/s  ETA \(Self.duration(eta))\u{1B}[K"
                output.write(Data(line.utf8))
            } else if linesWhenNotTerminal {
                let decile = Int(fraction * 10)
                guard decile > lastDecile else { return }
                lastDecile = decile
                writeLine("progress \(decile * 10)% \(completed)/\(total) bytes")
            }
        }
    }

    /// Ends the bar's line, if one was drawn.
    func finish() {
        lock.withLock {
            if drewBar { output.write(Data("\n".utf8)) }
            drewBar = false
        }
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    private static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        return total >= 60 ? "\(total / 60)m\(String(format: "%02d", total % 60))s" : "\(total)s"
    }
}

/// Writes a line to stdout unbuffered, so a waiting `--hold` shows it at once in a pipe.
func writeLine(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
