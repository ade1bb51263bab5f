import Foundation
import ODRFSCore
import Testing
@testable import ODRFSBuild

/// `odrfs build` of a bundle with capability variants: the spec's `variants:`, the
/// `NAME#KEY_VALUE` directory rules, packs per tag set and variant, and a manifest whose
/// published tree each mount resolves (``VariantView``).
@Suite("Variant builds")
struct VariantBuildTests {
    static let spec = """
        tags:
          Level1: ["levels/1/**"]
        variants:
          tcf:    {values: [astc, etc2, bc7], default: etc2}
          locale: {values: [en, it, ja], default: en}
          tier:   {values: [high, low], default: low, rules: {high: {min-memory: 8G, min-cpus: 4}}}

        """

    /// Textures in three formats, voice-over in two languages, a high-tier directory and
    /// plain files beside them.
    static func write(_ tree: TestTree) throws {
        try tree.write("src/odr.yaml", spec)
        for value in ["astc", "etc2", "bc7"] { try tree.write("src/levels/1/Textures#tcf_\(value)/t.ktx", "texture \(value)") }
        try tree.write("src/levels/1/Textures#tcf_astc/only-astc.ktx", "astc only")
        try tree.write("src/levels/1/map.dat", "map")
        try tree.write("src/levels/1/Hi#tier_high/detail.bin", "detail")
        for value in ["en", "it"] { try tree.write("src/Voice#locale_\(value)/hello.txt", "hello \(value)") }
        try tree.write("src/README.txt", "readme")
    }

    static func manifest(_ tree: TestTree) throws -> Manifest {
        try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: tree.path + "/dist/manifest.json")))
    }

    static func index(_ tree: TestTree, _ manifest: Manifest) throws -> FileIndex {
        try FileIndex(contentsOf: tree.path + "/dist/" + manifest.index.file)
    }

    @Test("packs form per tag set and variant; the manifest declares the keys and each pack's variant")
    func packsPerVariant() throws {
        let tree = try TestTree()
        try Self.write(tree)
        _ = try tree.builder("src").build(into: tree.path + "/dist")
        let manifest = try Self.manifest(tree)
        #expect(manifest.packs.map(\.id.rawValue) == [
            "base", "Level1", "Level1[tcf=astc]", "Level1[tcf=bc7]", "Level1[tcf=etc2]", "Level1[tier=high]",
            "base[locale=en]", "base[locale=it]",
        ])
        #expect(manifest.packs.first { $0.id.rawValue == "Level1[tcf=astc]" }?.files == 2)
        #expect(manifest.packs.first { $0.id.rawValue == "base[locale=it]" }?.variant?.description == "locale=it")
        #expect(manifest.packs.first { $0.id.rawValue == "base[locale=it]" }?.tags == [])
        #expect(manifest.packs[1].variant == nil)
        #expect(manifest.variants?.map(\.key.name) == ["tcf", "locale", "tier"], "declared order")
        #expect(manifest.variants?[0].values.map(\.name) == ["astc", "etc2", "bc7"])
        #expect(manifest.variants?[2].rules == [VariantRule(value: VariantValue(validating: "high")!,
                                                             minimumMemory: .gibibytes(8), minimumCPUs: 4)])
        // Tag patterns match logical paths: every variant of levels/1 carries Level1.
        #expect(manifest.tags.first?.packs.count == 5)
        let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: tree.path + "/dist/manifest.json")), as: UTF8.self)
        #expect(text.contains(#""variant" : {"#), "\(text)")
    }

    @Test("the published tree resolves per selection: preferred, then default, then the plain path, else hidden")
    func resolvesPerSelection() throws {
        let tree = try TestTree()
        try Self.write(tree)
        _ = try tree.builder("src").build(into: tree.path + "/dist")
        let manifest = try Self.manifest(tree)
        let index = try Self.index(tree, manifest)
        func view(_ explicit: [String: [String]], memory: ByteCount = .gibibytes(1), cpus: Int = 2,
                  environment: [String: String] = [:]) throws -> VariantView {
            let preferences = try VariantPreferences(wire: explicit)
            let selection = VariantSelection(declarations: manifest.variants ?? [], explicit: preferences.values,
                                             environment: environment, machine: .init(memory: memory, cpus: cpus))
            return try VariantView.resolve(manifest: manifest, index: index, selection: selection)
        }
        func pack(_ view: VariantView, _ path: String) -> String? {
            view.index.lookup(path: path).flatMap { view.index.entry($0)?.pack }.map { view.manifest.pack($0).id.rawValue }
        }
        let astc = try view(["tcf": ["astc"]])
        #expect(pack(astc, "levels/1/Textures/t.ktx") == "Level1[tcf=astc]")
        #expect(pack(astc, "levels/1/Textures/only-astc.ktx") == "Level1[tcf=astc]")
        #expect(pack(astc, "levels/1/map.dat") == "Level1")
        #expect(astc.index.lookup(path: "levels/1/Hi") == nil, "tier high needs 8G and 4 CPUs")
        #expect(astc.index.lookup(path: "levels/1/Textures#tcf_astc") == nil, "no suffix is ever shown")
        #expect(pack(astc, "Voice/hello.txt") == "base[locale=en]")
        #expect(astc.manifest.packs.map(\.id.rawValue) == ["base", "Level1", "Level1[tcf=astc]", "base[locale=en]"])
        #expect(astc.manifest.tags.first?.packs.map(\.rawValue) == ["Level1", "Level1[tcf=astc]"])
        #expect(astc.variantOfEntry[astc.index.lookup(path: "levels/1/Textures/t.ktx")!]?.description == "tcf=astc")
        #expect(astc.variantOfEntry[astc.index.lookup(path: "levels/1/map.dat")!] == nil)

        // A value the bundle lacks for a path falls back to the default; a file only one
        // other variant has is not there.
        let bc7 = try view(["tcf": ["bc7"]])
        #expect(pack(bc7, "levels/1/Textures/t.ktx") == "Level1[tcf=bc7]")
        #expect(bc7.index.lookup(path: "levels/1/Textures/only-astc.ktx") == nil)
        let pvr = try view([:], environment: ["LANG": "ja_JP.UTF-8"])
        #expect(pack(pvr, "levels/1/Textures/t.ktx") == "Level1[tcf=etc2]", "the default")
        #expect(pack(pvr, "Voice/hello.txt") == "base[locale=en]", "no ja in this bundle: the default")
        let italian = try view([:], environment: ["LC_ALL": "it_IT.UTF-8", "LANG": "ja_JP.UTF-8"])
        #expect(pack(italian, "Voice/hello.txt") == "base[locale=it]", "LC_ALL before LANG")
        let big = try view([:], memory: .gibibytes(16), cpus: 8)
        #expect(pack(big, "levels/1/Hi/detail.bin") == "Level1[tier=high]", "the rule holds on this machine")
    }

    @Test("the same input gives byte-identical output")
    func deterministic() throws {
        let tree = try TestTree()
        try Self.write(tree)
        _ = try tree.builder("src").build(into: tree.path + "/one")
        _ = try tree.builder("src").build(into: tree.path + "/two")
        #expect(try tree.snapshot("one") == tree.snapshot("two"))
    }

    @Test("without variants declared, '#' in a name is just a character")
    func hashWithoutVariants() throws {
        let tree = try TestTree()
        try tree.write("src/C#/notes#1.txt", "c sharp")
        try tree.write("src/x#tcf_astc/y.txt", "y")
        _ = try tree.builder("src").build(into: tree.path + "/dist")
        let manifest = try Self.manifest(tree)
        #expect(manifest.variants == nil && manifest.packs.map(\.id) == [.base])
        let index = try Self.index(tree, manifest)
        #expect(index.lookup(path: "x#tcf_astc/y.txt") != nil)
        let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: tree.path + "/dist/manifest.json")), as: UTF8.self)
        #expect(!text.contains("variant"), "no new keys in a manifest without variants")
    }

    @Test("each rule of the variant directories fails the build, naming the path", arguments: [
        ("src/x#foo_bar/a", "'x#foo_bar': variant key 'foo' is not declared"),
        ("src/x#tcf_pvrtc/a", "'x#tcf_pvrtc': 'pvrtc' is not a declared value of variant key 'tcf'"),
        ("src/x#tcf/a", "'x#tcf': not a variant directory name (NAME#KEY_VALUE): the suffix '#tcf' has no value"),
        ("src/#tcf_astc/a", "'#tcf_astc': not a variant directory name (NAME#KEY_VALUE): nothing precedes"),
        ("src/a#tcf_astc/b#tcf_bc7/c", "'a#tcf_astc/b#tcf_bc7': variant key 'tcf' appears twice in one path"),
        ("src/q#tcf_astc/a", "'q#tcf_astc': logical path 'q' is a directory here but a file at 'q'"),
        ("src/A#tier_high/B#tcf_astc/x", "logical path 'A/B/x' in variant 'tcf=astc,tier=high' is also written at 'A#tcf_astc/B#tier_high/x'"),
        ("src/.odrfs#locale_it/a", "'.odrfs#locale_it': the logical name '.odrfs' is reserved"),
    ])
    func refusals(path: String, message: String) throws {
        let tree = try TestTree()
        try tree.write("src/odr.yaml", Self.spec)
        try tree.write("src/q", "a file called q")
        try tree.write("src/A#tcf_astc/B#tier_high/x", "x")
        try tree.write(path, "bad")
        try BuildFailureTests.expectFailure(tree, .invalidVariant, containing: message)
    }

    @Test("variants: in odr.yaml is checked with line and column", arguments: [
        ("variants:\n  tcf: {values: [astc], default: bc7}\n", "2:34:", "the default 'bc7' of variant key 'tcf' is not one of its values"),
        ("variants:\n  tcf: {values: [astc, astc], default: astc}\n", "", "lists value 'astc' twice"),
        ("variants:\n  TCF: {values: [astc], default: astc}\n", "", "invalid variant key 'TCF'"),
        ("variants:\n  tcf: {values: [as tc], default: astc}\n", "", "invalid value 'as tc'"),
        ("variants:\n  tcf: {values: [astc]}\n", "", "needs a 'default'"),
        ("variants:\n  tcf: {values: [], default: astc}\n", "", "needs 'values'"),
        ("variants:\n  tcf: {values: [astc], default: astc, sizes: 2}\n", "", "unknown field 'sizes'"),
        ("variants:\n  tier: {values: [high], default: high, rules: {low: {min-cpus: 2}}}\n", "", "names 'low', which is not one of its values"),
        ("variants:\n  tier: {values: [high], default: high, rules: {high: {min-memory: lots}}}\n", "", "min-memory of 'high' must be a size"),
        ("variants:\n  tier: {values: [high], default: high, rules: {high: {min-gpus: 1}}}\n", "", "unknown condition 'min-gpus'"),
        ("variants: [tcf]\n", "", "'variants' must map each variant key"),
        ("variants:\n  tier: {values: [high], default: high, rules: {high: {}}}\n", "", "the rule for 'high' names no condition"),
        ("tags:\n  \"A[tcf=astc]\": [a]\nvariants:\n  tcf: {values: [astc], default: astc}\n", "", "'[' in a tag name"),
    ])
    func specRefusals(text: String, location: String, message: String) {
        do {
            _ = try TagSpec.parse(text, file: "odr.yaml")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.description.contains(message), "\(error)")
            #expect(error.description.hasPrefix("odr.yaml:" + location), "\(error)")
        }
    }
}
