import Foundation

/// The one-line text formats of key and signature files: `<label> <field> [<field>]`, ASCII,
/// fields separated by one space, an optional final newline, at most ``maxBytes`` bytes.
/// Everything here may come from an origin (signature files), so parsing is strict and
/// bounded and never traps.
enum KeyText {
    /// Far above any valid line (the longest, a signature line, is 130 bytes).
    static let maxBytes = 1024

    /// The fields after `label`, or nil when `bytes` is not exactly one such line with
    /// `fieldCount` fields.
    static func fields(of bytes: some Collection<UInt8>, label: String, fieldCount: Int) -> [Substring]? {
        guard bytes.count <= maxBytes else { return nil }
        var line = Array(bytes)
        if line.last == UInt8(ascii: "\n") { line.removeLast() }
        // Printable ASCII only: no second line, no control characters, no Unicode look-alikes.
        guard line.allSatisfy({ (0x20...0x7E).contains($0) }) else { return nil }
        let parts = String(decoding: line, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == fieldCount + 1, parts[0] == label, parts.allSatisfy({ !$0.isEmpty }) else { return nil }
        return Array(parts.dropFirst())
    }

    /// Standard base64 (with padding) of exactly `count` bytes, or nil.
    static func base64(_ text: Substring, count: Int) -> [UInt8]? {
        guard let data = Data(base64Encoded: String(text)), data.count == count else { return nil }
        return Array(data)
    }
}
