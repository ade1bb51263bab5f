import Foundation
import ODRFSCore

/// The file format, `key = value` per line:
///
///     # /etc/odrfs/bundles.d/travel.conf
///     origin = https://cdn.example.com/travel
///     mirrors = https://a.example.com/travel https://b.example.com/travel,token-file=/etc/odrfs/b.token
///     token-file = /etc/odrfs/travel.token
///     trust-key = /etc/odrfs/travel.pub
///
/// Blank lines and lines starting with `#` are ignored; spaces around the key and the
/// value are trimmed; a value runs to the end of the line (no quoting, no continuation).
/// The file is outside input to a root process, so it is bounded and strict: at most
/// 64 KiB of UTF-8, lines of at most 4096 bytes, no control characters, only known keys,
/// each at most once, and every value checked here.
extension BundleConfiguration {
    public static let maximumFileSize = 64 * 1024
    public static let maximumLineLength = 4096

    public init(parsing bytes: some Collection<UInt8>) throws(BundleConfigurationError) {
        guard bytes.count <= Self.maximumFileSize else {
            throw BundleConfigurationError(line: nil, "the file is larger than \(Self.maximumFileSize) bytes")
        }
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw BundleConfigurationError(line: nil, "the file is not UTF-8 text")
        }
        var values: [Key: (line: Int, value: String)] = [:]
        // Lines split on the byte: as Characters, "\r\n" is one grapheme that "\n" never matches.
        for (index, lineBytes) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            var line = Substring(String(decoding: lineBytes, as: UTF8.self))
            if line.unicodeScalars.last == "\r" { line = Substring(line.unicodeScalars.dropLast()) }
            guard line.utf8.count <= Self.maximumLineLength else {
                throw BundleConfigurationError(line: number, "longer than \(Self.maximumLineLength) bytes")
            }
            guard !line.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) else {
                throw BundleConfigurationError(line: number, "contains a control character")
            }
            let trimmed = Self.trim(line)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw BundleConfigurationError(line: number, "expected 'key = value'")
            }
            let name = Self.trim(trimmed[..<equals])
            let value = Self.trim(trimmed[trimmed.index(after: equals)...])
            guard let key = Key(rawValue: String(name)) else {
                let shown = name.count > 40 ? String(name.prefix(40)) + "…" : String(name)
                throw BundleConfigurationError(line: number, "unknown key '\(shown)' (known: \(Key.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            if let earlier = values[key] {
                throw BundleConfigurationError(line: number, "\(key.rawValue) is already set on line \(earlier.line)")
            }
            guard !value.isEmpty else { throw BundleConfigurationError(line: number, "\(key.rawValue) has no value") }
            // A tab separates the entries of a list; inside one value it is a control
            // character that URLComponents lets through (the bundleconf fuzz target found it).
            guard key == .mirrors || key == .trustKey || !value.contains("\t") else {
                throw BundleConfigurationError(line: number, "\(key.rawValue) contains a tab")
            }
            values[key] = (number, String(value))
        }
        guard let origin = values[.origin] else {
            throw BundleConfigurationError(line: nil, "no origin (add a line 'origin = https://…' or 'origin = /path/to/dist')")
        }
        self.init(origin: try Self.checkedOrigin(origin.value, line: origin.line))
        for (key, entry) in values.sorted(by: { $0.value.line < $1.value.line }) where key != .origin {
            try apply(key, entry.value, line: entry.line)
        }
    }

    private mutating func apply(_ key: Key, _ value: String, line: Int) throws(BundleConfigurationError) {
        switch key {
        case .origin: break
        case .mirrors:
            let words = value.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count <= Self.maximumMirrors else {
                throw BundleConfigurationError(line: line, "at most \(Self.maximumMirrors) mirrors")
            }
            mirrors = try words.map { (word: Substring) throws(BundleConfigurationError) in
                let mirror: MirrorOption
                do throws(FetchError) {
                    mirror = try MirrorOption(parsing: String(word))
                } catch {
                    throw BundleConfigurationError(line: line, "mirrors: \(error.message)")
                }
                if let file = mirror.tokenFile { _ = try Self.checkedPath(file, of: "a mirror's token-file", line: line) }
                return mirror
            }
        case .tokenFile: tokenFile = try Self.checkedPath(value, of: key.rawValue, line: line)
        case .caFile: caFile = try Self.checkedPath(value, of: key.rawValue, line: line)
        case .trustKey:
            let words = value.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count <= Self.maximumTrustKeys else {
                throw BundleConfigurationError(line: line, "at most \(Self.maximumTrustKeys) trust keys")
            }
            trustKeys = try words.map { (word: Substring) throws(BundleConfigurationError) in
                try Self.checkedPath(String(word), of: key.rawValue, line: line)
            }
        case .cache: cache = try Self.checkedPath(value, of: key.rawValue, line: line)
        case .store: store = try Self.checkedPath(value, of: key.rawValue, line: line)
        case .cacheSize: cacheSize = try Self.checkedSize(value, of: key.rawValue, minimum: 0, line: line)
        case .minFree: minFree = try Self.checkedSize(value, of: key.rawValue, minimum: 0, line: line)
        case .maxInUse: maxInUse = try Self.checkedSize(value, of: key.rawValue, minimum: 0, line: line)
        case .maxBackgroundRate: maxBackgroundRate = try Self.checkedSize(value, of: key.rawValue, minimum: 1024, line: line)
        case .fetchTimeout:
            guard let seconds = Double(value), seconds.isFinite, seconds > 0, seconds <= 3600 else {
                throw BundleConfigurationError(line: line, "fetch-timeout must be a number of seconds above 0 and at most 3600")
            }
            fetchTimeout = seconds
        case .proxy:
            guard let components = URLComponents(string: value), components.scheme?.lowercased() == "http",
                  let host = components.host, !host.isEmpty, components.port.map(OriginAddress.validPorts.contains) ?? true else {
                throw BundleConfigurationError(line: line, "proxy must be an http://host:port URL")
            }
            proxy = value
        case .offline:
            switch value.lowercased() {
            case "yes", "true", "on", "1": offline = true
            case "no", "false", "off", "0": offline = false
            default: throw BundleConfigurationError(line: line, "offline must be yes or no")
            }
        case .logLevel:
            guard Self.logLevels.contains(value) else {
                throw BundleConfigurationError(line: line, "log-level must be one of \(Self.logLevels.sorted().joined(separator: ", "))")
            }
            logLevel = value
        case .variants:
            let words = value.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            do throws(VariantPreferences.Problem) {
                _ = try VariantPreferences(arguments: words)
            } catch {
                throw BundleConfigurationError(line: line, "variants: \(error.reason) (write KEY=VALUE[,VALUE...] words, one per key)")
            }
            variants = words
        }
    }

    /// As `odrfs mount` reads its origin: http(s) through ``OriginAddress``, a file:// URL
    /// or a path. A path must be absolute here: there is no working directory to resolve a
    /// relative one against.
    static func checkedOrigin(_ value: String, line: Int) throws(BundleConfigurationError) -> String {
        let lowered = value.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            do {
                _ = try OriginAddress(value)
            } catch {
                throw BundleConfigurationError(line: line, "origin: \(error.message)")
            }
            return value
        }
        if lowered.hasPrefix("file://") {
            guard let url = URL(string: value), url.isFileURL, url.path.hasPrefix("/") else {
                throw BundleConfigurationError(line: line, "origin: not a valid file:// URL")
            }
            return value
        }
        return try checkedPath(value, of: "origin", line: line)
    }

    static func checkedPath(_ value: String, of what: String, line: Int) throws(BundleConfigurationError) -> String {
        guard value.hasPrefix("/") else {
            throw BundleConfigurationError(line: line, "\(what) must be an absolute path")
        }
        guard value.utf8.count <= Int(PATH_MAX) else {
            throw BundleConfigurationError(line: line, "\(what) is longer than \(PATH_MAX) bytes")
        }
        return value
    }

    static func checkedSize(_ value: String, of what: String, minimum: Int64, line: Int) throws(BundleConfigurationError) -> ByteCount {
        guard let size = ByteCount(parsing: value), size.value >= minimum else {
            throw BundleConfigurationError(line: line, "\(what) must be a size such as 512M or 2G\(minimum > 0 ? " of at least \(minimum) bytes" : "")")
        }
        return size
    }

    private static func trim(_ text: Substring) -> Substring {
        var result = text
        while let first = result.first, first == " " || first == "\t" { result.removeFirst() }
        while let last = result.last, last == " " || last == "\t" { result.removeLast() }
        return result
    }
}
