import ODRFSCore
import Yams

/// Parsing of `odr.yaml` through Yams' node tree, which keeps line and column marks so that
/// every error can point at the offending spot.
extension TagSpec {
    static let knownKeys = ["bundle", "tags", "initial-install", "prefetch", "preservation", "variants"]

    /// Parses and validates spec text; `file` names the spec in error messages.
    public static func parse(_ text: String, file: String = TagSpec.defaultFileName) throws(TagSpecError) -> TagSpec {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw syntaxError(error, file: file)
        } catch {
            throw TagSpecError(.syntax, file: file, "cannot parse YAML: \(error)")
        }
        guard let root else { return .empty }   // an empty file declares no tags
        return try SpecReader(file: file).read(root)
    }

    private static func syntaxError(_ error: YamlError, file: String) -> TagSpecError {
        switch error {
        case let .scanner(context, problem, mark, _), let .parser(context, problem, mark, _),
             let .composer(context, problem, mark, _):
            let detail = [context.map { "\($0.text)" }, problem].compactMap { $0 }.joined(separator: " ")
            return TagSpecError(.syntax, file: file, line: mark.line, column: mark.column, "YAML syntax error: \(detail)")
        case let .duplicatedKeysInMapping(duplicates, context):
            return TagSpecError(.syntax, file: file, line: context.mark.line, column: context.mark.column,
                                "duplicate key \(duplicates.map { "'\($0)'" }.joined(separator: ", "))")
        default:
            return TagSpecError(.syntax, file: file, "YAML syntax error: \(error)")
        }
    }
}

/// Walks the composed YAML, checking shapes and names.
private struct SpecReader {
    let file: String

    func error(_ kind: TagSpecError.Kind, at node: Node, _ message: String) -> TagSpecError {
        TagSpecError(kind, file: file, line: node.mark?.line, column: node.mark?.column, message)
    }

    func read(_ root: Node) throws(TagSpecError) -> TagSpec {
        guard let top = root.mapping else {
            throw error(.wrongType, at: root, "the tag spec must be a mapping with the keys \(TagSpec.knownKeys.joined(separator: ", "))")
        }
        var rules: [TagSpec.Rule] = []
        var lists: [String: [(ODRFSCore.Tag, Node)]] = [:]
        var preservation: [(ODRFSCore.Tag, Double, Node)] = []
        var variants: [VariantDeclaration] = []
        var bundle: BundleIdentity?
        for (keyNode, value) in top {
            let key = try scalar(keyNode, what: "a key")
            switch key {
            case "tags": rules = try readTags(value)
            case "initial-install", "prefetch": lists[key] = try readTagList(value, key: key)
            case "preservation": preservation = try readPreservation(value)
            case "variants": variants = try readVariants(value)
            case "bundle":
                let text = try scalar(value, what: "the bundle's identity")
                if let problem = BundleIdentity.problem(with: text) { throw error(.invalidBundleIdentity, at: value, "bundle: \(problem)") }
                bundle = BundleIdentity(text)
            default:
                throw error(.unknownKey, at: keyNode,
                            "unknown key '\(key)'; the tag spec knows \(TagSpec.knownKeys.joined(separator: ", "))")
            }
        }
        let declared = Set(rules.map(\.tag))
        for key in ["initial-install", "prefetch"] {
            var seen = Set<ODRFSCore.Tag>()
            for (tag, node) in lists[key] ?? [] {
                guard declared.contains(tag) else {
                    throw error(.unknownTag, at: node, "\(key) names tag '\(tag)', which is not defined under tags")
                }
                guard seen.insert(tag).inserted else {
                    throw error(.duplicateTag, at: node, "\(key) lists tag '\(tag)' twice")
                }
            }
        }
        if !variants.isEmpty, let rule = rules.first(where: { $0.tag.name.contains("[") }) {
            // `Level1[tcf=astc]` is the id of Level1's files in variant tcf=astc: a tag of
            // that name would share its pack.
            throw TagSpecError(.invalidTagName, file: file, "tag '\(rule.tag)': '[' in a tag name would clash with the pack ids of variants ('Level1[tcf=astc]')")
        }
        var priorities: [ODRFSCore.Tag: Double] = [:]
        for (tag, priority, node) in preservation {
            guard declared.contains(tag) else {
                throw error(.unknownTag, at: node, "preservation names tag '\(tag)', which is not defined under tags")
            }
            priorities[tag] = priority
        }
        return TagSpec(rules: rules, initialInstall: (lists["initial-install"] ?? []).map(\.0),
                       prefetch: (lists["prefetch"] ?? []).map(\.0), preservation: priorities, variants: variants, bundle: bundle)
    }

    private func scalar(_ node: Node, what: String) throws(TagSpecError) -> String {
        guard let scalar = node.scalar else { throw error(.wrongType, at: node, "expected \(what), found a \(shape(node))") }
        return scalar.string
    }

    private func shape(_ node: Node) -> String {
        switch node {
        case .scalar: return "value"
        case .mapping: return "mapping"
        case .sequence: return "list"
        case .alias: return "alias"
        }
    }

    private func isNull(_ node: Node) -> Bool {
        node.scalar.map { $0.style == .plain && ["", "~", "null", "Null", "NULL"].contains($0.string) } ?? false
    }

    private func tag(_ node: Node) throws(TagSpecError) -> ODRFSCore.Tag {
        let tag = ODRFSCore.Tag(try scalar(node, what: "a tag name"))
        if let problem = tag.validationProblem {
            throw error(.invalidTagName, at: node, "invalid tag name '\(tag)': \(problem)")
        }
        return tag
    }

    private func readTags(_ node: Node) throws(TagSpecError) -> [TagSpec.Rule] {
        if isNull(node) { return [] }
        guard let mapping = node.mapping else {
            throw error(.wrongType, at: node, "'tags' must map each tag name to a list of patterns, found a \(shape(node))")
        }
        var rules: [TagSpec.Rule] = []
        for (nameNode, patternsNode) in mapping {
            let tag = try tag(nameNode)
            var patternNodes: [Node]
            if let sequence = patternsNode.sequence {
                patternNodes = Array(sequence)
            } else if !isNull(patternsNode), patternsNode.scalar != nil {
                patternNodes = [patternsNode]   // a single pattern need not be wrapped in a list
            } else if isNull(patternsNode) {
                patternNodes = []
            } else {
                throw error(.wrongType, at: patternsNode, "tag '\(tag)' must have a list of patterns, found a \(shape(patternsNode))")
            }
            guard !patternNodes.isEmpty else {
                throw error(.tagWithoutPatterns, at: nameNode, "tag '\(tag)' has no patterns; give it at least one, e.g. \"\(tag)/**\"")
            }
            var patterns: [Glob] = []
            for patternNode in patternNodes {
                let text = try scalar(patternNode, what: "a pattern string")
                do {
                    patterns.append(try Glob(text))
                } catch {
                    throw self.error(.invalidPattern, at: patternNode, "tag '\(tag)': \(error)")
                }
            }
            rules.append(TagSpec.Rule(tag: tag, patterns: patterns))
        }
        return rules
    }

    private func readTagList(_ node: Node, key: String) throws(TagSpecError) -> [(ODRFSCore.Tag, Node)] {
        if isNull(node) { return [] }
        guard let sequence = node.sequence else {
            throw error(.wrongType, at: node, "'\(key)' must be a list of tag names, found a \(shape(node))")
        }
        var tags: [(ODRFSCore.Tag, Node)] = []
        for item in sequence { tags.append((try tag(item), item)) }
        return tags
    }

    private func readPreservation(_ node: Node) throws(TagSpecError) -> [(ODRFSCore.Tag, Double, Node)] {
        if isNull(node) { return [] }
        guard let mapping = node.mapping else {
            throw error(.wrongType, at: node, "'preservation' must map tag names to priorities in 0...1, found a \(shape(node))")
        }
        var result: [(ODRFSCore.Tag, Double, Node)] = []
        for (nameNode, valueNode) in mapping {
            let tag = try tag(nameNode)
            guard let value = Double(try scalar(valueNode, what: "a number")), value.isFinite else {
                throw error(.wrongType, at: valueNode, "preservation of '\(tag)' must be a number in 0...1")
            }
            guard (0...1).contains(value) else {
                throw error(.priorityOutOfRange, at: valueNode, "preservation of '\(tag)' is \(value), outside 0...1")
            }
            result.append((tag, value, nameNode))
        }
        return result
    }
}

/// `variants:`: each key with its values, default and machine rules.
extension SpecReader {
    private static let declarationKeys = ["values", "default", "rules"]
    private static let ruleKeys = ["min-memory", "min-cpus"]

    func readVariants(_ node: Node) throws(TagSpecError) -> [VariantDeclaration] {
        if isNull(node) { return [] }
        guard let mapping = node.mapping else {
            throw error(.wrongType, at: node, "'variants' must map each variant key to {values: [...], default: ...}, found a \(shape(node))")
        }
        guard mapping.count <= VariantDeclaration.maximumKeys else {
            throw error(.invalidVariant, at: node, "'variants' declares \(mapping.count) keys; the limit is \(VariantDeclaration.maximumKeys)")
        }
        var declarations: [VariantDeclaration] = []
        for (keyNode, body) in mapping {
            let name = try scalar(keyNode, what: "a variant key")
            guard let key = VariantKey(validating: name) else {
                throw error(.invalidVariant, at: keyNode, "invalid variant key '\(name)': \(VariantKey.problem(with: name) ?? "")")
            }
            declarations.append(try readDeclaration(key, body))
        }
        return declarations
    }

    private func readDeclaration(_ key: VariantKey, _ node: Node) throws(TagSpecError) -> VariantDeclaration {
        guard let mapping = node.mapping else {
            throw error(.wrongType, at: node, "variant key '\(key)' must be {values: [...], default: ...}, found a \(shape(node))")
        }
        var values: [VariantValue] = []
        var defaultValue: (VariantValue, Node)?
        var rules: [VariantRule] = []
        var rulesNode: Node?
        for (fieldNode, field) in mapping {
            switch try scalar(fieldNode, what: "a field name") {
            case "values":
                guard let sequence = field.sequence, !sequence.isEmpty else {
                    throw error(.invalidVariant, at: field, "variant key '\(key)' needs 'values': a non-empty list")
                }
                guard sequence.count <= VariantDeclaration.maximumValues else {
                    throw error(.invalidVariant, at: field, "variant key '\(key)' has \(sequence.count) values; the limit is \(VariantDeclaration.maximumValues)")
                }
                for item in sequence {
                    let value = try variantValue(item, key: key)
                    guard !values.contains(value) else {
                        throw error(.invalidVariant, at: item, "variant key '\(key)' lists value '\(value)' twice")
                    }
                    values.append(value)
                }
            case "default":
                defaultValue = (try variantValue(field, key: key), field)
            case "rules":
                rulesNode = field
            case let other:
                throw error(.unknownKey, at: fieldNode, "unknown field '\(other)' of variant key '\(key)'; it knows \(Self.declarationKeys.joined(separator: ", "))")
            }
        }
        guard !values.isEmpty else {
            throw error(.invalidVariant, at: node, "variant key '\(key)' needs 'values': a non-empty list")
        }
        guard let (chosen, defaultNode) = defaultValue else {
            throw error(.invalidVariant, at: node, "variant key '\(key)' needs a 'default', one of \(values.map(\.name))")
        }
        guard values.contains(chosen) else {
            throw error(.invalidVariant, at: defaultNode, "the default '\(chosen)' of variant key '\(key)' is not one of its values \(values.map(\.name))")
        }
        if let rulesNode, !isNull(rulesNode) {
            rules = try readRules(rulesNode, key: key, values: values)
        }
        return VariantDeclaration(key: key, values: values, defaultValue: chosen, rules: rules)
    }

    private func readRules(_ node: Node, key: VariantKey, values: [VariantValue]) throws(TagSpecError) -> [VariantRule] {
        guard let mapping = node.mapping else {
            throw error(.wrongType, at: node, "the rules of variant key '\(key)' must map values to {min-memory: ..., min-cpus: ...}")
        }
        var rules: [VariantRule] = []
        for (valueNode, conditions) in mapping {
            let value = try variantValue(valueNode, key: key)
            guard values.contains(value) else {
                throw error(.invalidVariant, at: valueNode, "a rule of variant key '\(key)' names '\(value)', which is not one of its values")
            }
            guard let fields = conditions.mapping else {
                throw error(.wrongType, at: conditions, "the rule for '\(value)' must be {min-memory: 8G, min-cpus: 4}")
            }
            var rule = VariantRule(value: value)
            guard !fields.isEmpty else {
                // A rule with no condition holds everywhere: the value would win on every machine.
                throw error(.invalidVariant, at: conditions, "the rule for '\(value)' names no condition (min-memory, min-cpus)")
            }
            for (fieldNode, field) in fields {
                let text = try scalar(field, what: "a number")
                switch try scalar(fieldNode, what: "a condition") {
                case "min-memory":
                    guard let bytes = ByteCount(parsing: text), bytes.value >= 0 else {
                        throw error(.invalidVariant, at: field, "min-memory of '\(value)' must be a size such as 8G, found '\(text)'")
                    }
                    rule.minimumMemory = bytes
                case "min-cpus":
                    guard let cpus = Int(text), (0...(1 << 20)).contains(cpus) else {
                        throw error(.invalidVariant, at: field, "min-cpus of '\(value)' must be a whole number in 0...\(1 << 20), found '\(text)'")
                    }
                    rule.minimumCPUs = cpus
                case let other:
                    throw error(.unknownKey, at: fieldNode, "unknown condition '\(other)' for '\(value)'; rules know \(Self.ruleKeys.joined(separator: ", "))")
                }
            }
            rules.append(rule)
        }
        return rules
    }

    private func variantValue(_ node: Node, key: VariantKey) throws(TagSpecError) -> VariantValue {
        let text = try scalar(node, what: "a variant value")
        guard let value = VariantValue(validating: text) else {
            throw error(.invalidVariant, at: node, "invalid value '\(text)' of variant key '\(key)': \(VariantValue.problem(with: text) ?? "")")
        }
        return value
    }
}
