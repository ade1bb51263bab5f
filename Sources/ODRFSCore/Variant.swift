/// Capability variants: one bundle carrying, say, ASTC and BC7 textures or English and
/// Italian voice-over, of which each mount serves one (see ``VariantSelection``).
///
/// A directory whose name ends in `#KEY_VALUE` (as Play Asset Delivery writes it:
/// `Textures#tcf_astc`) holds the `VALUE` variant of the logical directory without the
/// suffix (`Textures`). The manifest declares every key with its values and default
/// (``VariantDeclaration``); each pack holds files of one ``VariantAssignment`` (the empty
/// one for files outside every variant directory).
///
/// Keys are 1...32 ASCII lowercase letters and digits (no `_`, which ends the key in a
/// suffix); values 1...64 ASCII letters, digits, `-` and `_`. Both are checked where they
/// are parsed (``VariantKey/init(validating:)``), so a held value is always well-formed.
public struct VariantKey: VariantName {
    public let name: String

    /// The longest key accepted.
    public static let maximumLength = 32

    /// Why `name` cannot be a key, or nil.
    public static func problem(with name: String) -> String? {
        if name.isEmpty { return "a variant key must not be empty" }
        if name.utf8.count > maximumLength { return "a variant key has at most \(maximumLength) characters" }
        for byte in name.utf8 where !((UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                                      || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)) {
            return "a variant key holds only lowercase ASCII letters and digits"
        }
        return nil
    }

    /// A key, or nil when `name` is not one (see ``problem(with:)``).
    public init?(validating name: String) {
        guard Self.problem(with: name) == nil else { return nil }
        self.name = name
    }
}

/// One value of a ``VariantKey`` (`astc`, `it`, `high`).
public struct VariantValue: VariantName {
    public let name: String

    /// The longest value accepted.
    public static let maximumLength = 64

    /// Why `name` cannot be a value, or nil.
    public static func problem(with name: String) -> String? {
        if name.isEmpty { return "a variant value must not be empty" }
        if name.utf8.count > maximumLength { return "a variant value has at most \(maximumLength) characters" }
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                continue
            default:
                return "a variant value holds only ASCII letters, digits, '-' and '_'"
            }
        }
        return nil
    }

    /// A value, or nil when `name` is not one (see ``problem(with:)``).
    public init?(validating name: String) {
        guard Self.problem(with: name) == nil else { return nil }
        self.name = name
    }
}

/// A name checked once where it is parsed (``VariantKey``, ``VariantValue``): held only
/// when well-formed, compared by bytes, coded as a plain string that decoding checks again.
public protocol VariantName: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    var name: String { get }
    /// Why `name` is not well-formed, or nil.
    static func problem(with name: String) -> String?
    /// The name, or nil when ``problem(with:)`` refuses it: the only way to make one.
    init?(validating name: String)
}

extension VariantName {
    public var description: String { name }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.name.utf8.lexicographicallyPrecedes(rhs.name.utf8)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let checked = Self(validating: name) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(name)': \(Self.problem(with: name) ?? "")")
        }
        self = checked
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}

/// What a variant directory's name says: `Textures#tcf_astc` is the `astc` value of key
/// `tcf` for the logical directory `Textures`.
public struct VariantSuffix: Sendable, Equatable {
    /// The directory's name without the suffix.
    public var logicalName: String
    public var key: VariantKey
    public var value: VariantValue

    /// The suffix of a directory named `name`: nil when the name has no `#`; otherwise the
    /// text after the last `#` split at its first `_`, or why that is no suffix (no `_`, an
    /// empty or malformed key or value, nothing before the `#`).
    public static func parse(_ name: String) -> Result<VariantSuffix, VariantSuffixProblem>? {
        let bytes = Array(name.utf8)
        guard let hash = bytes.lastIndex(of: UInt8(ascii: "#")) else { return nil }
        let logical = String(decoding: bytes[..<hash], as: UTF8.self)
        let suffix = bytes[(hash + 1)...]
        guard !logical.isEmpty else { return .failure(.init(name: name, reason: "nothing precedes the '#' suffix")) }
        guard let underscore = suffix.firstIndex(of: UInt8(ascii: "_")) else {
            return .failure(.init(name: name, reason: "the suffix '#\(String(decoding: suffix, as: UTF8.self))' has no value (write #KEY_VALUE)"))
        }
        let keyText = String(decoding: suffix[..<underscore], as: UTF8.self)
        let valueText = String(decoding: suffix[(underscore + 1)...], as: UTF8.self)
        if let problem = VariantKey.problem(with: keyText) {
            return .failure(.init(name: name, reason: "'\(keyText)': \(problem)"))
        }
        if let problem = VariantValue.problem(with: valueText) {
            return .failure(.init(name: name, reason: "'\(valueText)': \(problem)"))
        }
        // Both checked just above.
        return .success(VariantSuffix(logicalName: logical, key: VariantKey(validating: keyText)!,
                                      value: VariantValue(validating: valueText)!))
    }
}

/// Why a directory name ending in `#…` is not a well-formed variant suffix.
public struct VariantSuffixProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var reason: String
    public var description: String { "'\(name)': \(reason)" }
}

/// The values of some keys that a file or pack belongs to: `tcf=astc,tier=high`. Empty for
/// files outside every variant directory. At most one value per key; kept sorted by key,
/// so equal assignments compare and print equal.
public struct VariantAssignment: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Sorted by key, one value per key.
    public private(set) var values: [(key: VariantKey, value: VariantValue)]

    public static let none = VariantAssignment()

    public init() { values = [] }

    /// Nil when a key appears twice.
    public init?(_ pairs: [(VariantKey, VariantValue)]) {
        let sorted = pairs.sorted { $0.0 < $1.0 }
        for index in sorted.indices.dropFirst() where sorted[index].0 == sorted[index - 1].0 { return nil }
        values = sorted.map { (key: $0.0, value: $0.1) }
    }

    public var isEmpty: Bool { values.isEmpty }

    public func value(of key: VariantKey) -> VariantValue? {
        values.first { $0.key == key }?.value
    }

    /// This assignment with `key` set to `value`, or nil when it has a value for `key` already.
    public func adding(_ key: VariantKey, _ value: VariantValue) -> VariantAssignment? {
        guard self.value(of: key) == nil else { return nil }
        return VariantAssignment(values.map { ($0.key, $0.value) } + [(key, value)])
    }

    /// `tcf=astc,tier=high`; empty for ``none``.
    public var description: String { values.map { "\($0.key)=\($0.value)" }.joined(separator: ",") }

    /// As the manifest writes it: `{"tcf": "astc"}`.
    public var dictionary: [String: String] {
        Dictionary(uniqueKeysWithValues: values.map { ($0.key.name, $0.value.name) })
    }

    public static func == (lhs: VariantAssignment, rhs: VariantAssignment) -> Bool {
        lhs.values.elementsEqual(rhs.values) { $0.key == $1.key && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for pair in values {
            hasher.combine(pair.key)
            hasher.combine(pair.value)
        }
    }

    public static func < (lhs: VariantAssignment, rhs: VariantAssignment) -> Bool {
        lhs.description.utf8.lexicographicallyPrecedes(rhs.description.utf8)
    }
}

extension PackID {
    /// The id of the pack holding the files tagged with exactly `tags` in `variant`:
    /// `Level1[tcf=astc]`, `base[locale=it]`; as ``init(tags:)`` for ``VariantAssignment/none``.
    public init(tags: [Tag], variant: VariantAssignment) {
        let plain = PackID(tags: tags)
        self = variant.isEmpty ? plain : PackID("\(plain.rawValue)[\(variant)]")
    }

    /// Whether this id is `PackID(tags: tags, variant: variant)` for `tags` already sorted and
    /// unique; without variants, compared byte by byte and nothing built (a manifest checks
    /// every pack's id, 100,000 of them at issue 28's scale).
    func isID(ofSortedTags tags: [Tag], variant: VariantAssignment) -> Bool {
        // Beyond ASCII, `==` is canonical equivalence ("K" equals the Kelvin sign): compared as built.
        guard variant.isEmpty, !tags.isEmpty, rawValue.isASCII, tags.allSatisfy(\.name.isASCII) else {
            return self == PackID(tags: tags, variant: variant)
        }
        var id = rawValue.utf8.makeIterator()
        for (position, tag) in tags.enumerated() {
            if position > 0, id.next() != UInt8(ascii: "+") { return false }
            for byte in tag.name.utf8 where id.next() != byte { return false }
        }
        return id.next() == nil
    }
}

extension VariantAssignment: Codable {
    /// Decodes `{"tcf": "astc"}`, every key and value checked.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode([String: String].self)
        var pairs: [(VariantKey, VariantValue)] = []
        for (key, value) in raw {
            guard let key = VariantKey(validating: key), let value = VariantValue(validating: value) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "variant '\(key)=\(value)' is not a well-formed key and value")
            }
            pairs.append((key, value))
        }
        // Dictionary keys are unique, so no key repeats.
        self = VariantAssignment(pairs) ?? .none
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(dictionary)
    }
}

extension String {
    /// Whether every byte is ASCII: then `==` and byte comparison agree.
    var isASCII: Bool { utf8.allSatisfy { $0 < 0x80 } }
}
