import Foundation
import Testing
@testable import ODRFSCore

/// The variant model: names, selection order, resolution of a hostile index, and the
/// manifest's checks of declarations and pack variants.
@Suite("Variants: selection, resolution and manifest checks")
struct VariantTests {
    typealias Node = FileIndexWriter.Node

    static func key(_ name: String) -> VariantKey { VariantKey(validating: name)! }
    static func value(_ name: String) -> VariantValue { VariantValue(validating: name)! }

    static let declarations = [
        VariantDeclaration(key: key("tcf"), values: ["astc", "etc2", "bc7"].map(value), defaultValue: value("etc2")),
        VariantDeclaration(key: key("locale"), values: ["en", "it", "ja", "pt-BR"].map(value), defaultValue: value("en")),
        VariantDeclaration(key: key("tier"), values: ["ultra", "high", "low"].map(value), defaultValue: value("low"),
                           rules: [VariantRule(value: value("ultra"), minimumMemory: .gibibytes(32)),
                                   VariantRule(value: value("high"), minimumMemory: .gibibytes(8), minimumCPUs: 4)]),
    ]

    static func selection(_ explicit: [String: [String]] = [:], environment: [String: String] = [:],
                          memory: ByteCount = .gibibytes(4), cpus: Int = 2) throws -> VariantSelection {
        VariantSelection(declarations: declarations, explicit: try VariantPreferences(wire: explicit).values,
                         environment: environment, machine: .init(memory: memory, cpus: cpus))
    }

    @Test("suffixes parse at the last '#', the key up to the first '_'")
    func suffixes() throws {
        let parsed = try #require(try VariantSuffix.parse("Tex#tures#tcf_astc_2")?.get())
        #expect(parsed.logicalName == "Tex#tures" && parsed.key.name == "tcf" && parsed.value.name == "astc_2")
        #expect(VariantSuffix.parse("Textures") == nil)
        for bad in ["#tcf_astc", "x#tcf", "x#_astc", "x#tcf_", "x#TCF_astc", "x#tcf_as.tc", "x#"] {
            guard case .failure? = VariantSuffix.parse(bad) else { Issue.record("accepted \(bad)"); continue }
        }
        #expect(PackID(tags: [Tag("A"), Tag("B")], variant: VariantAssignment([(Self.key("tier"), Self.value("high")), (Self.key("tcf"), Self.value("bc7"))])!).rawValue
                == "A+B[tcf=bc7,tier=high]", "keys sorted")
        #expect(PackID(tags: [], variant: .none) == .base)
        #expect(VariantAssignment([(Self.key("tcf"), Self.value("a")), (Self.key("tcf"), Self.value("b"))]) == nil)
    }

    @Test("the order per key: --variant, else the locale variables or the rules, then the default; undeclared values dropped")
    func orders() throws {
        let chosen = { (selection: VariantSelection) in selection.chosen.map { "\($0.key)=\($0.value)" } }
        #expect(chosen(try Self.selection()) == ["tcf=etc2", "locale=en", "tier=low"])
        #expect(chosen(try Self.selection(["tcf": ["pvrtc", "bc7"]])) == ["tcf=bc7", "locale=en", "tier=low"])
        #expect(chosen(try Self.selection(environment: ["LANG": "pt_BR.UTF-8"])) == ["tcf=etc2", "locale=pt-BR", "tier=low"])
        #expect(chosen(try Self.selection(environment: ["LANG": "it_IT.UTF-8@euro", "LC_MESSAGES": "ja_JP"])) == ["tcf=etc2", "locale=ja", "tier=low"])
        #expect(chosen(try Self.selection(environment: ["LC_ALL": "POSIX", "LANG": "it_IT"])) == ["tcf=etc2", "locale=en", "tier=low"])
        #expect(chosen(try Self.selection(memory: .gibibytes(16), cpus: 8)) == ["tcf=etc2", "locale=en", "tier=high"])
        #expect(chosen(try Self.selection(memory: .gibibytes(16), cpus: 2)) == ["tcf=etc2", "locale=en", "tier=low"], "high needs 4 CPUs")
        #expect(chosen(try Self.selection(memory: .gibibytes(64), cpus: 1)) == ["tcf=etc2", "locale=en", "tier=ultra"], "first ruled value that holds")
        let explicit = try Self.selection(["tier": ["high"]], memory: .gibibytes(64))
        #expect(explicit.orders[2].values.map(\.name) == ["high", "low"], "--variant replaces the rules")
    }

    @Test("rank: preferred before default before the path without a variant; another variant is never served")
    func ranks() throws {
        let selection = try Self.selection(["tcf": ["astc"]])
        let astc = VariantAssignment([(Self.key("tcf"), Self.value("astc"))])!
        let etc2 = VariantAssignment([(Self.key("tcf"), Self.value("etc2"))])!
        let bc7 = VariantAssignment([(Self.key("tcf"), Self.value("bc7"))])!
        let unknown = VariantAssignment([(Self.key("gpu"), Self.value("x"))])!
        let ranks = [astc, etc2, .none].map { selection.rank(of: $0)! }
        #expect(ranks[0].lexicographicallyPrecedes(ranks[1]) && ranks[1].lexicographicallyPrecedes(ranks[2]))
        #expect(selection.rank(of: bc7) == nil)
        #expect(selection.rank(of: unknown) == nil)
    }

    /// A published tree: `T#tcf_astc/t`, `T#tcf_bc7/t`, `T/plain`, `V#locale_it/v`.
    static func index(_ extra: [Node] = []) throws -> FileIndex {
        let file = { (name: String, pack: UInt32) in Node.file(name, size: 1, pack: PackNumber(pack), dataOffset: 0) }
        let root = Node.directory("", children: [
            .directory("T#tcf_astc", children: [file("t", 1)]),
            .directory("T#tcf_bc7", children: [file("t", 2), file("only-bc7", 2)]),
            .directory("T", children: [file("plain", 0)]),
            .directory("V#locale_it", children: [file("v", 3)]),
        ] + extra)
        return try FileIndex(bytes: FileIndexWriter(packCount: 4).encode(root: root))
    }

    static func manifest(packs: Int = 4) -> Manifest {
        let zero = ContentHash.of([])
        var manifest = Manifest(bundleVersion: zero, chunkSize: .mebibytes(1),
                                index: IndexReference(file: "index/x.odrx", bytes: .zero, sha256: zero, entries: 1),
                                packs: (0..<packs).map { PackDescriptor(id: PackID($0 == 0 ? "base" : "p\($0)"), tags: [], file: "packs/\($0)",
                                                                        bytes: ByteCount(10), sha256: ContentHash.of([UInt8($0)]), chunks: [], files: 1) },
                                tags: [], initialInstall: [], prefetch: [])
        manifest.variants = declarations
        return manifest
    }

    @Test("a view merges the variant directories of one logical directory and keeps only the packs it uses")
    func view() throws {
        let view = try VariantView.resolve(manifest: Self.manifest(), index: Self.index(), selection: Self.selection(["tcf": ["bc7"]]))
        let listing = view.index.children(of: view.index.lookup(path: "T")!).map { view.index.name(of: EntryNumber($0)) }
        #expect(listing == ["only-bc7", "plain", "t"])
        #expect(view.index.lookup(path: "V") == nil, "Italian only, English selected: nothing")
        #expect(view.manifest.packs.map(\.id.rawValue) == ["base", "p2"])
        #expect(view.index.entry(view.index.lookup(path: "T/t")!)?.pack == PackNumber(1), "renumbered into the cut manifest")
        #expect(view.manifest.index.entries == view.index.entryCount)
        let plain = try VariantView.resolve(manifest: { var m = Self.manifest(); m.variants = nil; return m }(), index: Self.index(),
                                            selection: .none)
        #expect(plain.index.lookup(path: "T#tcf_astc/t") != nil, "without declared variants the tree is served as published")
    }

    @Test("a hostile index is refused, never trapped on", arguments: [
        [Node.directory("X#gpu_x")], [Node.directory("X#tcf_pvrtc")], [Node.directory("X#tcf")],
        [Node.directory("A#tcf_astc", children: [.directory("B#tcf_bc7")])],
        [Node.directory("Q#tcf_astc"), Node.file("Q", size: 1, pack: PackNumber(0), dataOffset: 0)],
    ])
    func hostile(extra: [Node]) throws {
        #expect(throws: FileIndexError.self) {
            try VariantView.resolve(manifest: Self.manifest(), index: Self.index(extra), selection: Self.selection(["tcf": ["astc", "bc7"]]))
        }
    }

    @Test("depth and pack count are bounded before the recursive walk")
    func bounded() throws {
        var deep = Node.directory("leaf")
        for _ in 0..<(BundleLimits.maxVariantTreeDepth + 2) { deep = .directory("d", children: [deep]) }
        let index = try FileIndex(bytes: FileIndexWriter(packCount: 4).encode(root: .directory("", children: [deep])))
        #expect(throws: FileIndexError.self) { try VariantView.resolve(manifest: Self.manifest(), index: index, selection: Self.selection()) }
        #expect(throws: FileIndexError.self) { try VariantView.resolve(manifest: Self.manifest(packs: 2), index: Self.index(), selection: Self.selection()) }
    }

    @Test("the manifest checks declarations and each pack's variant")
    func manifestChecks() throws {
        func check(_ change: (inout Manifest) -> Void) -> ManifestError? {
            var manifest = ManifestTests.valid()
            manifest.variants = Self.declarations
            change(&manifest)
            manifest.bundleVersion = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs,
                                                                   variants: manifest.variants)
            do { _ = try Manifest.decode(manifest.encoded()); return nil } catch { return error }
        }
        #expect(check { _ in } == nil)
        #expect(check { $0.variants = Self.declarations + [Self.declarations[0]] }?.message.contains("declared twice") == true)
        #expect(check { $0.variants?[0].defaultValue = Self.value("pvrtc") }?.message.contains("not one of its values") == true)
        #expect(check { $0.variants = Array(repeating: Self.declarations[0], count: 17) }?.kind == .tooLarge)
        let astc = VariantAssignment([(Self.key("tcf"), Self.value("astc"))])!
        let variantPack = { (variant: VariantAssignment, id: String) in
            PackDescriptor(id: PackID(id), tags: [], file: "packs/v.tar", bytes: .zero, sha256: ContentHash.of([9]), chunks: [], files: 0,
                           variant: variant)
        }
        #expect(check { $0.packs.append(variantPack(astc, "base[tcf=astc]")) } == nil, "an untagged pack with a variant is the base's")
        #expect(check { $0.packs.append(variantPack(.none, "base2")) } != nil, "a second untagged pack without a variant")
        #expect(check { $0.packs.append(variantPack(astc, "base[tcf=bc7]")) }?.message.contains("does not match") == true)
        let undeclared = VariantAssignment([(Self.key("gpu"), Self.value("x"))])!
        #expect(check { $0.packs.append(variantPack(undeclared, "base[gpu=x]")) }?.message.contains("do not declare") == true)
        #expect(check { $0.packs[0].variant = astc }?.message.contains("base pack must have no variant") == true)
    }

    @Test("the declarations are part of the bundle version: a new default is an update; without variants the version is as before")
    func bundleVersion() {
        let manifest = ManifestTests.valid()
        let plain = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs)
        #expect(Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs, variants: nil) == plain)
        #expect(manifest.bundleVersion == plain)
        var declarations = Self.declarations
        let first = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs, variants: declarations)
        declarations[0].defaultValue = Self.value("astc")
        let second = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs, variants: declarations)
        declarations[2].rules[1].minimumCPUs = 8
        let third = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs, variants: declarations)
        #expect(Set([plain, first, second, third]).count == 4)
    }
}
