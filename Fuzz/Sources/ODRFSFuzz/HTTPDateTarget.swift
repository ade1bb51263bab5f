import ODRFSCore

/// IMF-fixdate as sent in If-Modified-Since (to `odrfs serve`) and Retry-After (to a mount).
enum HTTPDateTarget {
    static func run(_ text: String) {
        guard let seconds = HTTPDate.parse(text) else { return }
        // What the parser accepts, the formatter must be able to write back.
        let formatted = HTTPDate.format(secondsSinceEpoch: seconds)
        check(HTTPDate.parse(formatted) == seconds, "\(text) parsed to \(seconds), which formats as \(formatted) and does not parse back")
    }
}
