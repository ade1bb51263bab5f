import Foundation

/// A one-line progress bar on stderr (bytes, rate, ETA), redrawn in place; does
/// nothing when stderr is not a terminal. Not thread-safe: one owner draws.
final class ProgressBar {
    private let label: String
    private let enabled: Bool
    private let started = Date()
    private var drawn = false

    init(label: String, enabled: Bool) {
        self.label = label
        self.enabled = enabled
    }

    func update(done: Int64, total: Int64) {
        guard enabled, total > 0 else { return }
        let fraction = min(1, Double(done) / Double(total))
        let width = 30
        let filled = Int(fraction * Double(width))
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        let rate = Double(done) / elapsed
        let eta = rate > 0 && done < total ? " ETA \(Int(Double(total - done) / rate))s" : ""
        let line = "\r\(label) [\(String(repeating: "#", count: filled))\(String(repeating: ".", count: width - filled))] "
            + "\(Self.bytes(done))/\(Self.bytes(total)) \(Self.bytes(Int64(rate)))/s\(eta)   "
        FileHandle.standardError.write(Data(line.utf8))
        drawn = true
    }

    func finish() {
        if drawn { FileHandle.standardError.write(Data("\n".utf8)) }
        drawn = false
    }

    static func bytes(_ value: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var amount = Double(value)
        var unit = 0
        while amount >= 1024 && unit < units.count - 1 {
            amount /= 1024
            unit += 1
        }
        return unit == 0 ? "\(value) B" : String(format: "%.1f %@", amount, units[unit])
    }
}
