import ODRFSBuild
import ODRFSCore

/// odr.yaml as `odrfs build` reads it (JSON is YAML too), from a repository the builder may
/// not control.
enum TagSpecTarget {
    static func run(_ text: String) {
        guard let spec = try? TagSpec.parse(text) else { return }
        // What a parsed `variants:` promises the builder and, through the manifest, every mount.
        var keys = Set<String>()
        for declaration in spec.variants {
            check(keys.insert(declaration.key.name).inserted, "variant key \(declaration.key) parsed twice")
            check(declaration.problem == nil, "a parsed declaration is unusable: \(declaration.problem ?? "")")
            check(declaration.values.contains(declaration.defaultValue), "a default outside the values")
        }
        check(spec.variants.count <= VariantDeclaration.maximumKeys, "more variant keys than a manifest may declare")
    }
}
