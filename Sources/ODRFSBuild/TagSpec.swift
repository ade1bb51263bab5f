import ODRFSCore

/// The tag spec: which files carry which tags, and the categories and priorities of the tags.
///
/// ```yaml
/// bundle: com.example.Game   # the bundle's identity (optional; see BundleIdentity)
/// tags:
///   Iceland: ["Iceland/**", "iceland.json"]
///   Italy:   ["Italy/**", "italy.json"]
/// initial-install: [Iceland]
/// prefetch: [Italy]          # in this order
/// preservation: { Italy: 0.5 }
/// variants:                  # directories named NAME#KEY_VALUE hold that variant of NAME
///   tcf:  {values: [astc, etc2, bc7], default: etc2}
///   tier: {values: [high, low], default: low, rules: {high: {min-memory: 8G, min-cpus: 4}}}
/// ```
///
/// Parsing (``parse(_:file:)``) validates everything that does not need the resource tree;
/// patterns that match nothing are found later by the builder and are warnings.
public struct TagSpec: Sendable, Equatable {
    /// A tag and the patterns of the files it covers.
    public struct Rule: Sendable, Equatable {
        public var tag: ODRFSCore.Tag
        public var patterns: [Glob]
    }

    /// The spec file name looked for at the resource root when none is given.
    public static let defaultFileName = "odr.yaml"

    /// One rule per tag, sorted by tag.
    public var rules: [Rule]
    public var initialInstall: [ODRFSCore.Tag]
    /// In download order.
    public var prefetch: [ODRFSCore.Tag]
    /// Preservation priorities in 0...1; tags not listed have 0.
    public var preservation: [ODRFSCore.Tag: Double]
    /// The variant keys, in declared order; empty when the bundle has none (then no name
    /// is read as a variant suffix).
    public var variants: [VariantDeclaration]
    /// The bundle's identity (`bundle:`), if the spec gives one.
    public var bundle: BundleIdentity?

    /// A spec with no tags: every file goes into the base pack.
    public static let empty = TagSpec(rules: [], initialInstall: [], prefetch: [], preservation: [:])

    public init(rules: [Rule], initialInstall: [ODRFSCore.Tag], prefetch: [ODRFSCore.Tag],
                preservation: [ODRFSCore.Tag: Double], variants: [VariantDeclaration] = [], bundle: BundleIdentity? = nil) {
        self.rules = rules.sorted { $0.tag < $1.tag }
        self.initialInstall = initialInstall
        self.prefetch = prefetch
        self.preservation = preservation
        self.variants = variants
        self.bundle = bundle
    }

    public var tags: [ODRFSCore.Tag] { rules.map(\.tag) }

    /// Reads and parses the spec at `path`.
    public static func load(from path: String) throws(TagSpecError) -> TagSpec {
        let bytes: [UInt8]
        do {
            bytes = try POSIXFile.readAll(path)
        } catch {
            throw TagSpecError(.unreadable, file: path, "cannot read the tag spec: \(error.reason)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw TagSpecError(.syntax, file: path, "the tag spec is not valid UTF-8")
        }
        return try parse(text, file: path)
    }
}
