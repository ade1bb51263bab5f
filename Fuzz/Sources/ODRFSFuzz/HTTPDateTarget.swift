import ODRFSCore

/// IMF-fixdate as sent in If-Modified-Since (to `odrfs serve`) and Retry-After (to a mount).
///
/// The input is tried twice: as the header text itself (the syntax), and, from its first eight
/// bytes, as a well-formed date with any Int32 year and any day and clock values (the
/// numbers), which byte-level mutation of text would take long to reach.
enum HTTPDateTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        parseAndFormat(String(decoding: bytes, as: UTF8.self))
        guard bytes.count >= 8 else { return }
        let year = Int32(bitPattern: bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self))
        parseAndFormat("Sun, \(bytes[4]) Nov \(year) \(bytes[5]):\(bytes[6]):\(bytes[7]) GMT")
    }

    private static func parseAndFormat(_ text: String) {
        guard let seconds = HTTPDate.parse(text) else { return }
        // What the parser accepts, the formatter must be able to write back.
        let formatted = HTTPDate.format(secondsSinceEpoch: seconds)
        check(HTTPDate.parse(formatted) == seconds, "\(text) parsed to \(seconds), which formats as \(formatted) and does not parse back")
    }
}
