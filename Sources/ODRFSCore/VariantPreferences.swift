/// Variant values asked for by a user, per key in order of preference: what
/// `odrfs mount --variant KEY=V1,V2` and `odrfs variant MNT KEY=V1,V2` carry. Parsed once
/// into checked keys and values, bounded like the manifest's declarations; whether the
/// bundle declares them is the mount's to check.
public struct VariantPreferences: Sendable, Equatable {
    /// Per key, the values in order of preference (no duplicates, at least one).
    public private(set) var values: [VariantKey: [VariantValue]]

    public static let none = VariantPreferences(checked: [:])

    private init(checked: [VariantKey: [VariantValue]]) {
        values = checked
    }

    /// Why a text or wire form is not a preference list.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// `["tcf=astc,etc2", "locale=it"]`; a key named twice is an error.
    public init(arguments: [String]) throws(Problem) {
        var wire: [String: [String]] = [:]
        for argument in arguments {
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw Problem(reason: "'\(argument)' is not KEY=VALUE[,VALUE…]")
            }
            let key = String(parts[0])
            guard wire[key] == nil else { throw Problem(reason: "variant key '\(key)' is named twice") }
            wire[key] = parts[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        try self.init(wire: wire)
    }

    /// The control protocol's `{"tcf": ["astc", "etc2"]}`.
    public init(wire: [String: [String]]) throws(Problem) {
        guard wire.count <= VariantDeclaration.maximumKeys else {
            throw Problem(reason: "\(wire.count) variant keys; the limit is \(VariantDeclaration.maximumKeys)")
        }
        var checked: [VariantKey: [VariantValue]] = [:]
        for (name, names) in wire {
            guard let key = VariantKey(validating: name) else {
                throw Problem(reason: "'\(name)': \(VariantKey.problem(with: name) ?? "not a variant key")")
            }
            guard !names.isEmpty, names.count <= VariantDeclaration.maximumValues else {
                throw Problem(reason: "variant key '\(name)' needs 1…\(VariantDeclaration.maximumValues) values")
            }
            var values: [VariantValue] = []
            for text in names {
                guard let value = VariantValue(validating: text) else {
                    throw Problem(reason: "'\(name)=\(text)': \(VariantValue.problem(with: text) ?? "not a variant value")")
                }
                if !values.contains(value) { values.append(value) }
            }
            checked[key] = values
        }
        values = checked
    }

    public var isEmpty: Bool { values.isEmpty }

    /// The wire form.
    public var wire: [String: [String]] {
        Dictionary(uniqueKeysWithValues: values.map { ($0.key.name, $0.value.map(\.name)) })
    }

    /// These preferences, then `other`'s for the keys these do not name.
    public func overriding(_ other: VariantPreferences) -> VariantPreferences {
        VariantPreferences(checked: values.merging(other.values) { mine, _ in mine })
    }

    /// Why these preferences do not fit a bundle with `declarations`, or nil: a key it
    /// does not declare (a typo would silently serve defaults); with `valuesToo`, also a
    /// key none of whose named values it declares (an explicit switch to a value that is
    /// not there).
    public func problem(against declarations: [VariantDeclaration], valuesToo: Bool) -> String? {
        let undeclared = undeclaredKeys(in: declarations)
        if !undeclared.isEmpty {
            let known = declarations.isEmpty ? "it declares no variants" : "it declares " + declarations.map { "'\($0.key)'" }.joined(separator: ", ")
            return "the bundle has no variant key \(undeclared.map { "'\($0)'" }.joined(separator: ", ")); \(known)"
        }
        guard valuesToo else { return nil }
        for declaration in declarations {
            guard let named = values[declaration.key], !named.contains(where: declaration.values.contains) else { continue }
            return "variant key '\(declaration.key)' has no value \(named.map { "'\($0)'" }.joined(separator: ", ")); it has \(declaration.values.map { "'\($0)'" }.joined(separator: ", "))"
        }
        return nil
    }

    /// The keys named here that `declarations` do not declare, sorted.
    public func undeclaredKeys(in declarations: [VariantDeclaration]) -> [VariantKey] {
        let declared = Set(declarations.map(\.key))
        return values.keys.filter { !declared.contains($0) }.sorted()
    }
}
