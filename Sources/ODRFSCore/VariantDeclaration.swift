/// One variant key as the manifest declares it (from `odr.yaml`'s `variants:`): its values
/// in declared order, the default, and the machine rules that pick a value when the mount
/// names none (`tier: {rules: {high: {min-memory: 8G, min-cpus: 4}}}`).
public struct VariantDeclaration: Codable, Sendable, Equatable {
    public var key: VariantKey
    /// In declared order (the order rules are tried in); no duplicates.
    public var values: [VariantValue]
    /// One of ``values``.
    public var defaultValue: VariantValue
    /// Machine conditions per value; a value without rules is never chosen by rules.
    public var rules: [VariantRule]

    /// Bounds: the manifest is hostile input.
    public static let maximumKeys = 16
    public static let maximumValues = 64

    public init(key: VariantKey, values: [VariantValue], defaultValue: VariantValue, rules: [VariantRule] = []) {
        self.key = key
        self.values = values
        self.defaultValue = defaultValue
        self.rules = rules
    }

    enum CodingKeys: String, CodingKey {
        case key, values, rules
        case defaultValue = "default"
    }

    /// Why this declaration is unusable, or nil.
    public var problem: String? {
        if values.isEmpty { return "variant key '\(key)' declares no values" }
        if values.count > Self.maximumValues { return "variant key '\(key)' declares \(values.count) values; the limit is \(Self.maximumValues)" }
        if Set(values).count != values.count { return "variant key '\(key)' declares a value twice" }
        if !values.contains(defaultValue) { return "variant key '\(key)': the default '\(defaultValue)' is not one of its values" }
        var ruled = Set<VariantValue>()
        for rule in rules {
            if !values.contains(rule.value) { return "variant key '\(key)': a rule names '\(rule.value)', which is not one of its values" }
            if !ruled.insert(rule.value).inserted { return "variant key '\(key)': two rules for '\(rule.value)'" }
            if let memory = rule.minimumMemory, memory.value < 0 { return "variant key '\(key)': min-memory of '\(rule.value)' is negative" }
            if let cpus = rule.minimumCPUs, cpus < 0 || cpus > 1 << 20 { return "variant key '\(key)': min-cpus of '\(rule.value)' is outside 0...\(1 << 20)" }
        }
        return nil
    }
}

/// The machine a value of a key requires (all given conditions must hold).
public struct VariantRule: Codable, Sendable, Equatable {
    public var value: VariantValue
    /// `min-memory`: physical memory at least this.
    public var minimumMemory: ByteCount?
    /// `min-cpus`: at least this many online CPUs.
    public var minimumCPUs: Int?

    public init(value: VariantValue, minimumMemory: ByteCount? = nil, minimumCPUs: Int? = nil) {
        self.value = value
        self.minimumMemory = minimumMemory
        self.minimumCPUs = minimumCPUs
    }

    enum CodingKeys: String, CodingKey {
        case value
        case minimumMemory = "minMemory"
        case minimumCPUs = "minCPUs"
    }

    /// Whether a machine with `memory` bytes and `cpus` CPUs meets every condition.
    public func holds(memory: ByteCount, cpus: Int) -> Bool {
        (minimumMemory.map { memory >= $0 } ?? true) && (minimumCPUs.map { cpus >= $0 } ?? true)
    }
}
