/// A strict pull reader of one JSON document (RFC 8259) in memory, for the documents too large
/// for `JSONDecoder`'s tree: `manifest.json` names every pack of a bundle, 80 MB at 100,000
/// packs, where `JSONDecoder` builds a map of every value and then a `Decoder` container per
/// object, and spent 1.6 s and ~250 MiB doing so (issue 28). The caller walks the document in
/// order and builds its own types directly; nothing else is allocated but the strings it reads.
///
/// It accepts what `JSONDecoder` accepts (a trailing comma in a container, an integer written
/// `3000.0`, a UTF-8 byte order mark, anything inside strings no one reads), so that a
/// manifest that mounted before still does; except UTF-16 documents and integers of 2^53
/// or more written with a fraction or an exponent, which `odrfs build` never writes.
///
/// Hostile input: every read is bounds-checked against the buffer, nesting is limited to
/// ``maximumDepth`` (``skipValue()`` recurses), integers are read with checked arithmetic,
/// strings are validated UTF-8 with no control characters and no unpaired surrogates, and
/// anything else after the document is an error. Each error carries the byte offset.
///
/// Invariant: `position` never exceeds `bytes.count`. The buffer must outlive the cursor
/// (use it inside `withUnsafeBytes`).
struct JSONCursor {
    /// Why the document cannot be read: what was expected, at which byte, and (filled in by
    /// the caller on the way out, see ``inside(_:)``) in which member.
    struct Failure: Error, Equatable {
        var message: String
        /// Nil for a problem of meaning rather than syntax (a member that is missing).
        var offset: Int?
        /// Member names and `[index]`es from the top, outermost first.
        var path: [String] = []

        init(message: String, offset: Int?) {
            self.message = message
            self.offset = offset
        }

        /// This failure, seen from the member or element `component` of its container.
        func inside(_ component: String) -> Failure {
            var copy = self
            copy.path.insert(component, at: 0)
            return copy
        }

        /// `packs[3].sha256`, or "the top level".
        var location: String {
            var text = ""
            for component in path {
                text += component.hasPrefix("[") || text.isEmpty ? component : "." + component
            }
            return text.isEmpty ? "the top level" : text
        }
    }

    /// What one `enterObject()` or `enterArray()` has seen so far.
    struct Container {
        fileprivate var isFirst = true
    }

    /// Deep enough for any document ODRFS writes (manifests nest four levels), shallow enough
    /// that ``skipValue()``'s recursion stays far from the stack's end.
    static let maximumDepth = 64

    private let bytes: UnsafeRawBufferPointer
    private(set) var position = 0
    private var depth = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        // A UTF-8 byte order mark (an editor may write one): skipped, as `JSONDecoder` does.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
    }

    // MARK: structure

    /// Consumes `{`.
    mutating func enterObject() throws(Failure) -> Container {
        try enter(UInt8(ascii: "{"), "an object")
    }

    /// Consumes `[`.
    mutating func enterArray() throws(Failure) -> Container {
        try enter(UInt8(ascii: "["), "an array")
    }

    /// The next member's key, with its `:` consumed so that the value follows; nil after the
    /// closing `}` (consumed).
    mutating func nextKey(_ object: inout Container) throws(Failure) -> String? {
        guard try nextItem(&object, closing: UInt8(ascii: "}")) else { return nil }
        guard peek() == UInt8(ascii: "\"") else { throw failure("expected a member name in quotes") }
        let key = try readString()
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else { throw failure("expected ':' after a member name") }
        position += 1
        return key
    }

    /// Whether another element follows (then it is next); false after the closing `]` (consumed).
    mutating func nextElement(_ array: inout Container) throws(Failure) -> Bool {
        try nextItem(&array, closing: UInt8(ascii: "]"))
    }

    /// Only whitespace may follow the document.
    mutating func expectEnd() throws(Failure) {
        skipWhitespace()
        guard position == bytes.count else { throw failure("unexpected data after the document") }
    }

    // MARK: values

    /// Whether the next value is `null`; consumes it when it is.
    mutating func readNull() -> Bool {
        skipWhitespace()
        guard matches("null") else { return false }
        position += 4
        return true
    }

    /// What kind of value comes next, for messages: "a string", "an object", ….
    mutating func nextKind() -> String {
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: "\""): return "a string"
        case UInt8(ascii: "{"): return "an object"
        case UInt8(ascii: "["): return "an array"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return "a boolean"
        case UInt8(ascii: "n"): return "null"
        case nil: return "the end of the document"
        case let byte? where isDigit(byte) || byte == UInt8(ascii: "-"): return "a number"
        case let byte?: return byte >= 0x21 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        }
    }

    /// A string value, unescaped and validated.
    mutating func readString() throws(Failure) -> String {
        skipWhitespace()
        guard peek() == UInt8(ascii: "\"") else { throw failure("expected a string, found \(nextKind())") }
        let start = position + 1
        var end = start
        var allBits: UInt8 = 0
        // Fast path: no escapes, the common case for every string ODRFS writes.
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") {
                let text: String
                let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
                if allBits < 0x80 {
                    // ASCII is valid UTF-8 as it is. `String(validating:as:)` is generic and
                    // looked up type metadata on every call: a third of reading a 71 MB
                    // manifest (700,000 strings at 100,000 tags, issue 28).
                    text = raw.withMemoryRebound(to: UInt8.self) { String(decoding: $0, as: UTF8.self) }
                } else {
                    guard let validated = String(validating: raw, as: UTF8.self) else {
                        throw Failure(message: "a string is not valid UTF-8", offset: start)
                    }
                    text = validated
                }
                position = end + 1
                return text
            }
            allBits |= byte
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw Failure(message: "a control character in a string", offset: end) }
            end += 1
        }
        guard end < bytes.count else { throw Failure(message: "a string is not closed", offset: start - 1) }
        return try readEscapedString(from: start)
    }

    /// An integer value: no fraction or exponent, within `Int64`.
    mutating func readInteger() throws(Failure) -> Int64 {
        skipWhitespace()
        let start = position
        let negative = peek() == UInt8(ascii: "-")
        if negative { position += 1 }
        guard let first = peek(), isDigit(first) else { throw Failure(message: "expected an integer, found \(nextKind())", offset: start) }
        if first == UInt8(ascii: "0"), let next = byte(at: position + 1), isDigit(next) {
            throw Failure(message: "a number has a leading zero", offset: start)
        }
        var magnitude: UInt64 = 0
        while let digit = peek(), isDigit(digit) {
            let (times, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { throw Failure(message: "an integer is out of range", offset: start) }
            magnitude = sum
            position += 1
        }
        if let next = peek(), next == UInt8(ascii: ".") || next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
            // `3000.0` and `3e3` are integers to `JSONDecoder` too: accepted when exact.
            position = start
            let value = try readNumber()
            // Below 2^53 every integer is exact as a Double; at 2^53 `…993.0` would round.
            guard value == value.rounded(.towardZero), abs(value) < 9_007_199_254_740_992 else {
                throw Failure(message: "expected an integer, found \(value)", offset: start)
            }
            return Int64(value)
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { throw Failure(message: "an integer is out of range", offset: start) }
            return magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { throw Failure(message: "an integer is out of range", offset: start) }
        return Int64(magnitude)
    }

    /// A number value, finite.
    mutating func readNumber() throws(Failure) -> Double {
        skipWhitespace()
        let start = position
        try scanNumber()
        let digits = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
        let text = String(decoding: digits, as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw Failure(message: "a number is out of range", offset: start) }
        // `1e-400` is not 0 but too small for a Double: refused, as `JSONDecoder` refuses it.
        if value == 0 {
            let mantissa = digits.prefix { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }
            guard mantissa.allSatisfy({ $0 == UInt8(ascii: "0") || !isDigit($0) }) else {
                throw Failure(message: "a number is out of range", offset: start)
            }
        }
        return value
    }

    /// Skips one value of any kind, checking its syntax.
    mutating func skipValue() throws(Failure) {
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: "\""):
            try skipString()
        case UInt8(ascii: "{"):
            var object = try enterObject()
            while try nextKey(&object) != nil { try skipValue() }
        case UInt8(ascii: "["):
            var array = try enterArray()
            while try nextElement(&array) { try skipValue() }
        case UInt8(ascii: "t"):
            guard matches("true") else { throw failure("expected a value") }
            position += 4
        case UInt8(ascii: "f"):
            guard matches("false") else { throw failure("expected a value") }
            position += 5
        case UInt8(ascii: "n"):
            guard readNull() else { throw failure("expected a value") }
        default:
            try scanNumber()
        }
    }

    /// The bytes of the next value, checked and skipped: for the few small parts of a document
    /// that are still decoded with `Decodable`.
    mutating func rawValue() throws(Failure) -> UnsafeRawBufferPointer {
        skipWhitespace()
        let start = position
        try skipValue()
        return UnsafeRawBufferPointer(rebasing: bytes[start..<position])
    }

    // MARK: internals

    /// Past a string that nothing reads (an unknown member's): only its end is found, as
    /// `JSONDecoder` never looks inside such a string either.
    private mutating func skipString() throws(Failure) {
        let start = position
        var index = position + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                position = index + 1
                return
            case UInt8(ascii: "\\"):
                index += 2
            default:
                index += 1
            }
        }
        throw Failure(message: "a string is not closed", offset: start)
    }

    private mutating func enter(_ opening: UInt8, _ what: String) throws(Failure) -> Container {
        skipWhitespace()
        guard peek() == opening else { throw failure("expected \(what), found \(nextKind())") }
        guard depth < Self.maximumDepth else { throw failure("nested deeper than \(Self.maximumDepth) levels") }
        depth += 1
        position += 1
        return Container()
    }

    private mutating func nextItem(_ container: inout Container, closing: UInt8) throws(Failure) -> Bool {
        skipWhitespace()
        if peek() == closing {
            position += 1
            depth -= 1
            return false
        }
        if container.isFirst {
            container.isFirst = false
        } else {
            guard peek() == UInt8(ascii: ",") else {
                throw failure(peek() == nil ? "the document ends inside \(closing == UInt8(ascii: "}") ? "an object" : "an array")" : "expected ',' or '\(Character(Unicode.Scalar(closing)))'")
            }
            position += 1
            skipWhitespace()
            // `[1,]` is not JSON, but `JSONDecoder` has always accepted it, so manifests that
            // mounted before still do.
            if peek() == closing {
                position += 1
                depth -= 1
                return false
            }
        }
        guard peek() != nil else { throw failure("the document ends inside a container") }
        return true
    }

    private mutating func readEscapedString(from start: Int) throws(Failure) -> String {
        var out: [UInt8] = []
        var index = start
        while true {
            guard index < bytes.count else { throw Failure(message: "a string is not closed", offset: start - 1) }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            guard byte >= 0x20 else { throw Failure(message: "a control character in a string", offset: index) }
            guard byte == UInt8(ascii: "\\") else {
                out.append(byte)
                index += 1
                continue
            }
            guard let escape = self.byte(at: index + 1) else { throw Failure(message: "a string is not closed", offset: start - 1) }
            index += 2
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var unit = try hexUnit(at: index)
                index += 4
                if (0xD800...0xDBFF).contains(unit) {
                    guard self.byte(at: index) == UInt8(ascii: "\\"), self.byte(at: index + 1) == UInt8(ascii: "u") else {
                        throw Failure(message: "an unpaired surrogate in a string", offset: index)
                    }
                    let low = try hexUnit(at: index + 2)
                    guard (0xDC00...0xDFFF).contains(low) else { throw Failure(message: "an unpaired surrogate in a string", offset: index) }
                    index += 6
                    unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(unit) {
                    throw Failure(message: "an unpaired surrogate in a string", offset: index)
                }
                // Every value here is a valid scalar: surrogates were paired or refused above.
                guard let scalar = Unicode.Scalar(unit) else { throw Failure(message: "an invalid \\u escape", offset: index) }
                out.append(contentsOf: String(Character(scalar)).utf8)
            default:
                throw Failure(message: "an invalid escape '\\\(Character(Unicode.Scalar(escape)))' in a string", offset: index - 2)
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw Failure(message: "a string is not valid UTF-8", offset: start) }
        position = index + 1
        return text
    }

    private func hexUnit(at index: Int) throws(Failure) -> UInt32 {
        var value: UInt32 = 0
        for offset in 0..<4 {
            guard let byte = byte(at: index + offset) else { throw Failure(message: "a \\u escape is cut off", offset: index) }
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw Failure(message: "a \\u escape has a non-hex digit", offset: index + offset)
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// number = [ "-" ] int [ frac ] [ exp ], consumed.
    private mutating func scanNumber() throws(Failure) {
        let start = position
        if peek() == UInt8(ascii: "-") { position += 1 }
        guard let first = peek(), isDigit(first) else { throw Failure(message: "expected a value", offset: start) }
        if first == UInt8(ascii: "0") {
            position += 1
            if let next = peek(), isDigit(next) { throw Failure(message: "a number has a leading zero", offset: start) }
        } else {
            skipDigits()
        }
        if peek() == UInt8(ascii: ".") {
            position += 1
            guard let digit = peek(), isDigit(digit) else { throw Failure(message: "a number's fraction has no digits", offset: start) }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            guard let digit = peek(), isDigit(digit) else { throw Failure(message: "a number's exponent has no digits", offset: start) }
            skipDigits()
        }
    }

    private mutating func skipDigits() {
        while let byte = peek(), isDigit(byte) { position += 1 }
    }

    private mutating func skipWhitespace() {
        while position < bytes.count, isWhitespace(bytes[position]) { position += 1 }
    }

    private func matches(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count - position >= count else { return false }
        let pointer = word.utf8Start
        for offset in 0..<count where bytes[position + offset] != pointer[offset] { return false }
        return true
    }

    private func peek() -> UInt8? { byte(at: position) }

    private func byte(at index: Int) -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private func failure(_ message: String) -> Failure { Failure(message: message, offset: position) }
}
