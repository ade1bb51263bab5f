import ODRFSCore
import Foundation
import HTTPTypes

/// RFC 9110 §13 preconditions for a GET or HEAD of a static file.
enum ConditionalRequest {
    /// If-None-Match (weak comparison, `*` matches) or, only when it is absent,
    /// If-Modified-Since: true when the client's copy is current and 304 is the answer.
    static func isNotModified(_ headers: HTTPFields, file: ServedFile) -> Bool {
        let noneMatch = headers[values: .ifNoneMatch]
        if !noneMatch.isEmpty {
            let offered = noneMatch.flatMap { $0.split(separator: ",") }
                .map { $0.trimmingCharacters(in: .whitespaces) }
            return offered.contains { $0 == "*" || weakValue($0) == weakValue(file.entityTag) }
        }
        if let since = headers[.ifModifiedSince], isPlausibleDate(since), let date = HTTPDate.parse(since) {
            return file.modifiedSeconds <= date
        }
        return false
    }

    /// If-Range: a range applies only if the client's validator still matches, strongly for an
    /// ETag, exactly for a date; otherwise the whole (changed) file is sent.
    static func rangeApplies(_ headers: HTTPFields, file: ServedFile) -> Bool {
        guard let validator = headers[.ifRange]?.trimmingCharacters(in: .whitespaces) else { return true }
        if validator.hasPrefix("W/") { return false }
        if validator.hasPrefix("\"") { return validator == file.entityTag }
        return validator == file.lastModified
    }

    /// An IMF-fixdate is exactly 29 ASCII bytes with a four-digit year ("Sun, 06 Nov 1994
    /// 08:49:37 GMT"): anything else is ignored before it reaches the parser, so a year such
    /// as -2147483648 cannot reach date arithmetic whatever the parser does with it.
    static func isPlausibleDate(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 29 else { return false }
        return bytes[12..<16].allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    private static func weakValue(_ tag: String) -> String {
        tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
    }
}
