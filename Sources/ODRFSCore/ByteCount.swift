import Foundation

/// A number of bytes: pack sizes, chunk sizes, cache limits.
///
/// Prints in binary units ("12.5 MiB", "512 B") and parses what people type on a command line
/// ("64M", "64MiB", "2G", "1024", "1.5GiB"). Units are always binary (K = 1024), case-insensitive.
/// Encodes as a plain JSON integer.
public struct ByteCount: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var value: Int64

    public init(_ value: Int64) {
        self.value = value
    }

    public static let zero = ByteCount(0)
    public static func kibibytes(_ n: Int64) -> ByteCount { ByteCount(n << 10) }
    public static func mebibytes(_ n: Int64) -> ByteCount { ByteCount(n << 20) }
    public static func gibibytes(_ n: Int64) -> ByteCount { ByteCount(n << 30) }

    private static let units: [(suffix: String, shift: Int64)] = [
        ("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10),
    ]

    public var description: String {
        let magnitude = value.magnitude
        let sign = value < 0 ? "-" : ""
        for unit in Self.units where magnitude >= (UInt64(1) << UInt64(unit.shift)) {
            let scaled = Double(magnitude) / Double(UInt64(1) << UInt64(unit.shift))
            let tenths = (scaled * 10).rounded()
            // "1 MiB" rather than "1.0 MiB"; one decimal otherwise.
            let text = tenths.truncatingRemainder(dividingBy: 10) == 0
                ? String(Int64(tenths / 10))
                : String(Int64(tenths) / 10) + "." + String(Int64(tenths) % 10)
            return sign + text + " " + unit.suffix
        }
        return "\(value) B"
    }

    /// Parses "64M", "64 MiB", "2g", "1024", "1.5GiB", "512B". Returns nil for anything else,
    /// including negative numbers and values that do not fit in 63 bits.
    public init?(parsing text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let numberEnd = trimmed.firstIndex { !($0.isASCII && ($0.isNumber || $0 == ".")) } ?? trimmed.endIndex
        let number = String(trimmed[..<numberEnd])
        let suffix = trimmed[numberEnd...].trimmingCharacters(in: .whitespaces)
        let shift: Int64
        switch suffix {
        case "", "b": shift = 0
        case "k", "kb", "kib": shift = 10
        case "m", "mb", "mib": shift = 20
        case "g", "gb", "gib": shift = 30
        case "t", "tb", "tib": shift = 40
        case "p", "pb", "pib": shift = 50
        default: return nil
        }
        guard !number.isEmpty, number.filter({ $0 == "." }).count <= 1,
              number.first != ".", number.last != "." else { return nil }
        if let whole = Int64(number) {
            let (result, overflow) = whole.multipliedReportingOverflow(by: Int64(1) << shift)
            guard !overflow else { return nil }
            self.value = result
        } else if let fraction = Double(number) {
            let result = (fraction * Double(Int64(1) << shift)).rounded(.down)
            guard result < 9.2e18 else { return nil }
            self.value = Int64(result)
        } else {
            return nil
        }
    }

    public static func < (lhs: ByteCount, rhs: ByteCount) -> Bool { lhs.value < rhs.value }
    // Saturating: sizes are bounded once validated (``BundleLimits``), but a ByteCount can also
    // come from a command line or a decoded status, and byte accounting must never trap.
    public static func + (lhs: ByteCount, rhs: ByteCount) -> ByteCount {
        let (sum, overflow) = lhs.value.addingReportingOverflow(rhs.value)
        return ByteCount(overflow ? (rhs.value > 0 ? .max : .min) : sum)
    }
    public static func - (lhs: ByteCount, rhs: ByteCount) -> ByteCount {
        let (difference, overflow) = lhs.value.subtractingReportingOverflow(rhs.value)
        return ByteCount(overflow ? (rhs.value < 0 ? .max : .min) : difference)
    }
    public static func += (lhs: inout ByteCount, rhs: ByteCount) { lhs = lhs + rhs }
    public static func -= (lhs: inout ByteCount, rhs: ByteCount) { lhs = lhs - rhs }

    public init(from decoder: any Decoder) throws {
        self.value = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}
