import Foundation

/// HTTP dates (RFC 9110 IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT"): Last-Modified,
/// If-Modified-Since and If-Range in `odrfs serve`, Retry-After in the fetcher.
///
/// Written by hand because Hummingbird keeps its formatter internal, `strftime` follows the
/// process locale, and a `DateFormatter` per request would be slow.
public enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The years an IMF-fixdate can hold (`year = 4DIGIT`); also what keeps `timegm` and the
    /// `tm_year` offset far from overflow.
    public static let yearRange: ClosedRange<Int32> = 1...9999

    /// Formats whole seconds since the epoch. Times outside ``yearRange`` (a file's mtime can
    /// be anything) are clamped to its first or last second, never trap.
    public static func format(secondsSinceEpoch seconds: Int) -> String {
        var time = time_t(min(max(seconds, firstSecond), lastSecond))
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let year = Int(parts.tm_year) + 1900
        let yearText = year < 1000 ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
        return "\(days[Int(parts.tm_wday) % 7]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon) % 12]) \(yearText) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
    private static let firstSecond = -62_135_596_800
    private static let lastSecond = 253_402_300_799

    /// Parses an IMF-fixdate; nil for anything else (the obsolete RFC 850 and asctime forms
    /// that no current client sends are treated as absent, which only costs a full response).
    /// Years outside ``yearRange`` are nil: the text comes from a client or an origin.
    public static func parse(_ text: String) -> Int? {
        let fields = text.split(separator: " ")
        guard fields.count == 6, fields[0].hasSuffix(","), days.contains(String(fields[0].dropLast())),
              fields[5] == "GMT", let day = Int32(fields[1]), let month = months.firstIndex(of: String(fields[2])),
              let year = Int32(fields[3]) else { return nil }
        let clock = fields[4].split(separator: ":").compactMap { Int32($0) }
        guard yearRange.contains(year), clock.count == 3, (1...31).contains(day), (0...23).contains(clock[0]),
              (0...59).contains(clock[1]), (0...60).contains(clock[2]) else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = Int32(month)
        parts.tm_mday = day
        parts.tm_hour = clock[0]
        parts.tm_min = clock[1]
        parts.tm_sec = clock[2]
        // A leap second (:60) on 9999-12-31 or a day past the month's end normalises
        // past the last representable second: not a date an IMF-fixdate can hold.
        let seconds = Int(timegm(&parts))
        return (firstSecond...lastSecond).contains(seconds) ? seconds : nil
    }
}
