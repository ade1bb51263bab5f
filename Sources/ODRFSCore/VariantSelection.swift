/// Which variant of each key a mount serves, as an order of preference per key, ending in
/// the key's default: `tcf: [astc, etc2]` serves ASTC where a path has it, else the default
/// ETC2, else the path without a variant (``rank(of:)``).
///
/// Built by ``init(declarations:explicit:environment:machine:)``: for each declared key, the
/// values named with `--variant KEY=V1,V2` (in that order); without them, `locale` follows
/// `LC_ALL`, `LC_MESSAGES`, then `LANG` (`it_IT.UTF-8` prefers `it-IT`, then `it`), and a
/// key with rules takes the first value, in declared order, whose rule the machine meets.
/// Values the bundle does not declare are dropped; the default always ends the order.
public struct VariantSelection: Sendable, Equatable, CustomStringConvertible {
    /// Per declared key, in declaration order: the values in order of preference, no
    /// duplicates, the default last (it may also come earlier).
    public private(set) var orders: [(key: VariantKey, values: [VariantValue])]

    /// The selection of a bundle that declares no variants.
    public static let none = VariantSelection(orders: [])

    private init(orders: [(key: VariantKey, values: [VariantValue])]) {
        self.orders = orders
    }

    /// What the mount knows about the machine, for ``VariantRule``s.
    public struct Machine: Sendable, Equatable {
        public var memory: ByteCount
        public var cpus: Int
        public init(memory: ByteCount, cpus: Int) {
            self.memory = memory
            self.cpus = cpus
        }
    }

    /// - `explicit`: `--variant` values per key, in the order given (keys the bundle does
    ///   not declare are the caller's to report; here they are ignored).
    /// - `environment`: the process environment (only the locale variables are read).
    public init(declarations: [VariantDeclaration], explicit: [VariantKey: [VariantValue]],
                environment: [String: String], machine: Machine) {
        orders = declarations.map { declaration in
            let declared = Set(declaration.values)
            var preferred: [VariantValue]
            if let named = explicit[declaration.key] {
                preferred = named
            } else if declaration.key.name == "locale" {
                preferred = Self.localePreferences(environment)
            } else {
                preferred = declaration.values.filter { value in
                    declaration.rules.contains { $0.value == value && $0.holds(memory: machine.memory, cpus: machine.cpus) }
                }.prefix(1).map { $0 }
            }
            var order: [VariantValue] = []
            for value in preferred + [declaration.defaultValue] where declared.contains(value) && !order.contains(value) {
                order.append(value)
            }
            return (key: declaration.key, values: order)
        }
    }

    /// The environment variables the `locale` key follows, first set first.
    public static let localeVariables = ["LC_ALL", "LC_MESSAGES", "LANG"]

    /// `it_IT.UTF-8@euro` → [`it-IT`, `it_IT`, `it`]; `C`, `POSIX` and unset → [].
    static func localePreferences(_ environment: [String: String]) -> [VariantValue] {
        let raw = localeVariables.lazy.compactMap { environment[$0] }.first { !$0.isEmpty } ?? ""
        let name = raw.split(separator: ".", maxSplits: 1).first.map(String.init) ?? ""
        let bare = name.split(separator: "@", maxSplits: 1).first.map(String.init) ?? ""
        guard !bare.isEmpty, bare != "C", bare != "POSIX" else { return [] }
        let language = bare.split(separator: "_", maxSplits: 1).first.map(String.init) ?? bare
        return [bare.replacingOccurrences(of: "_", with: "-"), bare, language].compactMap { VariantValue(validating: $0) }
    }

    /// The value each key serves first (its first preference): what `odrfs status` shows.
    public var chosen: [(key: VariantKey, value: VariantValue)] {
        orders.compactMap { order in order.values.first.map { (key: order.key, value: $0) } }
    }

    /// `tcf=astc,locale=it`.
    public var description: String { chosen.map { "\($0.key)=\($0.value)" }.joined(separator: ",") }

    /// How well a file or directory of `assignment` fits: nil when one of its values is not
    /// in this selection's order (another variant's file, never served); otherwise, per key
    /// in declaration order, the value's position in the order, or the order's length when
    /// the assignment has no value for the key (the path without a variant comes last).
    /// Of the candidates for one logical path the least rank, compared lexicographically,
    /// is served.
    public func rank(of assignment: VariantAssignment) -> [Int]? {
        var rank: [Int] = []
        rank.reserveCapacity(orders.count)
        var matched = 0
        for order in orders {
            if let value = assignment.value(of: order.key) {
                guard let position = order.values.firstIndex(of: value) else { return nil }
                rank.append(position)
                matched += 1
            } else {
                rank.append(order.values.count)
            }
        }
        // A key this selection does not know (not declared): never served.
        return matched == assignment.values.count ? rank : nil
    }

    public static func == (lhs: VariantSelection, rhs: VariantSelection) -> Bool {
        lhs.orders.elementsEqual(rhs.orders) { $0.key == $1.key && $0.values == $1.values }
    }
}
