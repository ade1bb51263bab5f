import Foundation
import ArgumentParser

/// A duration on the command line: `500ms`, `5s`, `1.5s`, `2m`, or plain seconds (`5`).
/// Between 0 and one day.
struct DurationArgument: ExpressibleByArgument, Sendable {
    let value: Duration

    init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [(suffix: String, milliseconds: Double)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000)]
        var number = text
        var scale = 1000.0
        for unit in units where text.hasSuffix(unit.suffix) {
            number = String(text.dropLast(unit.suffix.count))
            scale = unit.milliseconds
            break
        }
        guard let amount = Double(number), amount.isFinite, amount >= 0, amount * scale <= 86_400_000 else { return nil }
        value = .milliseconds(Int64(amount * scale))
    }
}
