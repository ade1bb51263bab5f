import Foundation

/// The first of ``DistDirectory``'s defences: the raw request target, checked before and
/// after percent-decoding, turned into a path relative to the dist dir — or refused.
///
/// Segments are split and compared as UTF-8 bytes, the way the kernel walks a path, never
/// as Swift `Character`s: a prepend mark such as U+0600 before a `/` (or a combining mark
/// after one) makes the two a single `Character`, which hid a `..` segment from a
/// `Character` split (`/x%D8%80/../etc`). Its own type, so the fuzz package can compile
/// this file alone.
enum RequestPath {
    /// Why a target is refused.
    enum Rejection: Error, Equatable {
        /// Not a path the server will look up at all (400).
        case malformed(String)
        /// A dot file, never served (404, as if absent).
        case hidden
    }

    /// The decoded path relative to the dist dir, for an origin-form target such as
    /// `/packs/a%20b.tar`.
    static func relative(_ target: String) -> Result<String, Rejection> {
        guard target.hasPrefix("/") else { return .failure(.malformed("not an origin-form path")) }
        guard let decoded = target.removingPercentEncoding else { return .failure(.malformed("invalid percent encoding")) }
        let bytes = Array(decoded.utf8)
        guard !bytes.contains(0), !bytes.contains(UInt8(ascii: "\\")) else {
            return .failure(.malformed("NUL or backslash in path"))
        }
        let dot = UInt8(ascii: "."), slash = UInt8(ascii: "/")
        let segments = bytes.dropFirst().split(separator: slash, omittingEmptySubsequences: false)
        for segment in segments {
            if segment.elementsEqual([dot, dot]) || segment.elementsEqual([dot]) {
                return .failure(.malformed("dot segment in path"))
            }
            if segment.isEmpty { return .failure(.malformed("empty segment in path")) }
            if segment.first == dot { return .failure(.hidden) }
        }
        // Split at ASCII bytes of valid UTF-8, so the rest is valid UTF-8 as it was.
        return .success(String(decoding: bytes.dropFirst(), as: UTF8.self))
    }
}
