import Foundation
import Testing
import TestSupport
@testable import ODRFSCore

/// ``ManifestReader`` (what `Manifest.decode` uses) against `JSONDecoder` with the `Decodable`
/// conformances (`Manifest.decodeWithFoundation`): the same manifest from the same bytes, and
/// nothing accepted that `JSONDecoder` refuses (issue 28).
@Suite struct ManifestReadingTests {
    /// ``ManifestTests/valid()`` with every optional part: compressed packs (frames listed and
    /// a `frameTable`), a variant pack and its declaration, mirrors, identity, expiry.
    static func rich() -> Manifest {
        var manifest = ManifestTests.valid()
        manifest.packs[1].compression = PackCompression(bytes: ByteCount(35), frames: [
            .init(offset: 0, length: 10), .init(offset: 10, length: 20), .init(offset: 30, length: 5),
        ])
        manifest.packs[3].compression = PackCompression(bytes: ByteCount(7), frames: [.init(offset: 0, length: 7, size: 1)])
        var variantPack = ManifestTests.pack(["Level1"], bytes: 2000)
        let assignment = try? #require(VariantAssignment([(VariantKey(validating: "tcf")!, VariantValue(validating: "astc")!)]))
        variantPack.variant = assignment
        variantPack.id = PackID(tags: [Tag("Level1")], variant: assignment ?? .none)
        variantPack.sha256 = ManifestTests.hash("variant")
        manifest.packs.insert(variantPack, at: 3)
        manifest.tags[0].packs.append(variantPack.id)
        manifest.variants = [VariantDeclaration(key: VariantKey(validating: "tcf")!,
                                                values: [VariantValue(validating: "astc")!, VariantValue(validating: "etc2")!],
                                                defaultValue: VariantValue(validating: "astc")!,
                                                rules: [VariantRule(value: VariantValue(validating: "etc2")!, minimumMemory: .mebibytes(1), minimumCPUs: 2)])]
        manifest.mirrors = ["https://mirror.example/dist/"]
        manifest.bundle = BundleIdentity("com.example.Game")
        manifest.expires = 2_000_000_000
        manifest.revision = 7
        manifest.bundleVersion = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs, variants: manifest.variants)
        return manifest
    }

    /// Both readers on `data`: whatever the reader accepts, `JSONDecoder` accepts, equal.
    static func compare(_ data: Data, sourceLocation: SourceLocation = #_sourceLocation) -> Manifest? {
        let fast = Result { () throws(ManifestError) in try Manifest.decode(data) }
        let foundation = Result { () throws(ManifestError) in try Manifest.decodeWithFoundation(data) }
        switch (fast, foundation) {
        case (.success(let read), .success(let decoded)):
            #expect(read == decoded, "the readers disagree on \(String(decoding: data, as: UTF8.self))", sourceLocation: sourceLocation)
            return read
        case (.success, .failure(let error)):
            Issue.record("the reader accepts what JSONDecoder refuses (\(error)): \(String(decoding: data, as: UTF8.self))", sourceLocation: sourceLocation)
            return nil
        case (.failure(let error), .success):
            // Refusing more is allowed only for what the reader refuses on purpose.
            #expect(error.message.contains("appears twice"), "the reader refuses what JSONDecoder accepts (\(error)): \(String(decoding: data, as: UTF8.self))",
                    sourceLocation: sourceLocation)
            return nil
        case (.failure, .failure):
            return nil
        }
    }

    @Test func richManifestReadsAsDecodableDoes() throws {
        let manifest = Self.rich()
        let pretty = manifest.encoded()
        #expect(String(decoding: pretty, as: UTF8.self).contains("frameTable"))
        #expect(Self.compare(pretty) == manifest)
        let compact = try JSONEncoder().encode(manifest)
        #expect(Self.compare(compact) == manifest)
        #expect(Self.compare(ManifestTests.valid().encoded()) == ManifestTests.valid())
    }

    @Test func escapesNullsAndUnknownMembers() throws {
        var text = String(decoding: Self.rich().encoded(), as: UTF8.self)
        // An escaped slash and \u escapes read as the plain characters.
        text = text.replacingOccurrences(of: "\"index/i.odrx\"", with: #""index\/\u0069.odrx""#)
        // null is an absent optional member; unknown members of any shape are skipped.
        text = text.replacingOccurrences(of: "\"chunkSize\" :", with: #""future" : [{"a": [1.5e3, true, false, null, "\ud83d\ude00"]}], "expires" : null, "chunkSize" :"#)
        text = text.replacingOccurrences(of: "\"expires\" : 2000000000,", with: "")
        let manifest = try #require(Self.compare(Data(text.utf8)))
        #expect(manifest.index.file == "index/i.odrx")
        #expect(manifest.expires == nil)
    }

    @Test func problemsAreNamedWithTheirPlace() {
        let valid = String(decoding: Self.rich().encoded(), as: UTF8.self)
        func failure(_ text: String) -> ManifestError? {
            #expect(Self.compare(Data(text.utf8)) == nil)
            do {
                _ = try Manifest.decode(Data(text.utf8))
                return nil
            } catch {
                return error
            }
        }
        let missing = failure(valid.replacingOccurrences(of: "\"chunkSize\"", with: "\"chunkSiz\""))
        #expect(missing == ManifestError(.syntax, "chunkSize is missing"))
        let missingHash = failure(valid.replacingOccurrences(of: "\"sha256\" : \"\(ManifestTests.hash("variant").hex)\"", with: "\"sha257\" : 1"))
        #expect(missingHash == ManifestError(.syntax, "packs[3].sha256 is missing"))
        let type = failure(valid.replacingOccurrences(of: "\"bytes\" : 3000", with: "\"bytes\" : \"big\""))
        #expect(type?.message.hasPrefix("packs[1].bytes: expected an integer, found a string (byte ") == true, "\(String(describing: type))")
        let fraction = failure(valid.replacingOccurrences(of: "\"bytes\" : 3000", with: "\"bytes\" : 3000.5"))
        #expect(fraction?.message.contains("packs[1].bytes: expected an integer, found 3000.5") == true, "\(String(describing: fraction))")
        // An integral number with a fraction or exponent is an integer, as for JSONDecoder.
        #expect(Self.compare(Data(valid.replacingOccurrences(of: "\"bytes\" : 3000", with: "\"bytes\" : 3.0e3").utf8)) == Self.rich())
        let badHash = failure(valid.replacingOccurrences(of: ManifestTests.hash("index").hex, with: "zz"))
        #expect(badHash?.message.contains("index.sha256: expected 64 hex digits") == true, "\(String(describing: badHash))")
        let twice = failure(valid.replacingOccurrences(of: "\"chunkSize\" :", with: "\"format\" : 1, \"chunkSize\" :"))
        #expect(twice?.message.contains("'format' appears twice") == true, "\(String(describing: twice))")
        for broken in [valid + "x", String(valid.dropLast(3)), valid.replacingOccurrences(of: "\"bytes\" : 3000", with: "\"bytes\" : 03000"),
                       valid.replacingOccurrences(of: "com.example.Game", with: "com.example.\\ud800Game"),
                       valid.replacingOccurrences(of: "com.example.Game", with: "com.example.\u{1}Game"),
                       valid.replacingOccurrences(of: "\"bytes\" : 3000", with: "\"bytes\" : 99999999999999999999")] {
            let error = failure(broken)
            #expect(error?.kind == .syntax, "\(String(describing: error))")
        }
        // A trailing comma is accepted, as JSONDecoder accepts it.
        #expect(Self.compare(Data(valid.replacingOccurrences(of: "\"Level2\"\n  ]", with: "\"Level2\",\n  ]").utf8)) == Self.rich())
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let nested = failure(valid.replacingOccurrences(of: "\"chunkSize\" :", with: "\"future\" : \(deep), \"chunkSize\" :"))
        #expect(nested?.message.contains("nested deeper than 64 levels") == true, "\(String(describing: nested))")
    }

    /// Random edits of a valid manifest, compact and pretty: the reader never accepts what
    /// `JSONDecoder` refuses, and agrees with it on what both accept.
    @Test func mutatedManifestsReadAsDecodableDoes() throws {
        var generator = SplitMix(seed: 28)
        let alphabet = Array(#"{}[]",:0123456789-+.eE \ntrufalsn"\u00"#.utf8)
        var accepted = 0
        for base in [Self.rich().encoded(), try JSONEncoder().encode(Self.rich())] {
            let original = Array(base)
            for _ in 0..<1500 {
                var bytes = original
                for _ in 0..<Int(generator.next() % 3 + 1) {
                    let position = Int(generator.next() % UInt64(bytes.count))
                    switch generator.next() % 4 {
                    case 0: bytes[position] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                    case 1: bytes.remove(at: position)
                    case 2: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: position)
                    default:
                        let end = min(bytes.count, position + Int(generator.next() % 40))
                        bytes.insert(contentsOf: bytes[position..<end], at: position)
                    }
                }
                if Self.compare(Data(bytes)) != nil { accepted += 1 }
            }
        }
        // Whitespace and digit edits keep some manifests valid: both readers were compared on them.
        #expect(accepted > 0)
    }

    /// Validation's allocation-free id check agrees with building the id.
    @Test func idCheckAgreesWithTheBuiltID() throws {
        let astc = try #require(VariantAssignment([(VariantKey(validating: "tcf")!, VariantValue(validating: "astc")!)]))
        let tagSets: [[String]] = [[], ["A"], ["B"], ["A", "B"], ["A", "BC"], ["AB"], ["A", "B", "C"]]
        let ids = ["base", "A", "B", "A+B", "A+BC", "AB", "A+B+C", "A+", "+A", "A+B+", "", "A[tcf=astc]", "A+B[tcf=astc]", "base[tcf=astc]"]
        for tags in tagSets {
            for variant in [VariantAssignment.none, astc] {
                for id in ids {
                    let tagValues = tags.map(Tag.init)
                    #expect(PackID(id).isID(ofSortedTags: tagValues, variant: variant) == (PackID(id) == PackID(tags: tagValues, variant: variant)),
                            "\(id) against \(tags) \(variant)")
                }
            }
        }
    }

    /// The index's name, read early: found wherever it stands, nil when missing, malformed or unsafe.
    @Test func indexReferenceIsReadAlone() throws {
        let manifest = Self.rich()
        #expect(ManifestReader.indexReference(in: manifest.encoded()) == manifest.index)
        // After the packs too (sorted keys put it first; a hand-written manifest may not).
        let index = String(decoding: try JSONEncoder().encode(manifest.index), as: UTF8.self)
        let last = #"{"packs": [{"id": "x"}], "other": {"index": 1}, "index": \#(index)}"#
        #expect(ManifestReader.indexReference(in: Data(last.utf8)) == manifest.index)
        var unsafe = manifest
        unsafe.index.file = "../../etc/passwd"
        #expect(ManifestReader.indexReference(in: unsafe.encoded()) == nil)
        var huge = manifest
        huge.index.bytes = ByteCount(.max)
        #expect(ManifestReader.indexReference(in: huge.encoded()) == nil)
        for broken in ["", "[]", "{", #"{"index": {"file": 1}}"#, #"{"packs": [}"#, #"{"index": null}"#] {
            #expect(ManifestReader.indexReference(in: Data(broken.utf8)) == nil, "\(broken)")
        }
    }

    /// The review's cases (session 15): each reader gives the same verdict.
    @Test func edgesOfNumbersAndTextAgreeWithJSONDecoder() throws {
        let valid = String(decoding: Self.rich().encoded(), as: UTF8.self)
        // Too small for a Double is not 0: both refuse.
        for tiny in ["1e-400", "2.4e-324"] {
            let text = valid.replacingOccurrences(of: "\"preservationPriority\" : 0.5", with: "\"preservationPriority\" : \(tiny)")
            #expect(text != valid)
            #expect(Self.compare(Data(text.utf8)) == nil)
            #expect(throws: ManifestError.self) { try Manifest.decode(Data(text.utf8)) }
        }
        // 0 written as 0.0e5 is still 0.
        let zero = valid.replacingOccurrences(of: "\"preservationPriority\" : 0.5", with: "\"preservationPriority\" : 0.0e5")
        #expect(Self.compare(Data(zero.utf8))?.tags[0].preservationPriority == 0)
        // 2^53 + 1 written with a fraction would round to 2^53: refused, never read as another number.
        let rounded = valid.replacingOccurrences(of: "\"revision\" : 7", with: "\"revision\" : 9007199254740993.0")
        #expect(rounded != valid)
        #expect(throws: ManifestError.self) { try Manifest.decode(Data(rounded.utf8)) }
        let files = valid.replacingOccurrences(of: "\"files\" : 1,", with: "\"files\" : 9007199254740993.0,")
        #expect(throws: ManifestError.self) { try Manifest.decode(Data(files.utf8)) }
        // A UTF-8 byte order mark, and raw control bytes or broken UTF-8 inside a string no one reads.
        #expect(Self.compare(Data([0xEF, 0xBB, 0xBF]) + Data(valid.utf8)) == Self.rich())
        var unread = Data(valid.replacingOccurrences(of: "\"chunkSize\" :", with: "\"future\" : \"a\u{01}b\", \"other\" : \"@\", \"chunkSize\" :").utf8)
        let at = try #require(unread.firstIndex(of: UInt8(ascii: "@")))
        unread[at] = 0xFF
        #expect(Self.compare(unread) == Self.rich())
        // Messages name what was found.
        let brace = valid.replacingOccurrences(of: "\"format\" : 1,", with: "\"format\" : },")
        #expect(throws: ManifestError.self) { try Manifest.decode(Data(brace.utf8)) }
        do {
            _ = try Manifest.decode(Data(brace.utf8))
        } catch {
            #expect(error.message.contains("format: expected an integer, found '}'"), "\(error)")
        }
    }

    /// Tags and ids beyond ASCII compare by canonical equivalence, as they always did.
    @Test func canonicallyEqualTagsAndIDs() throws {
        // "K" and the Kelvin sign are equal Strings, so the same PackID.
        #expect(PackID("K").isID(ofSortedTags: [Tag("\u{212A}")], variant: .none))
        #expect(PackID("e\u{301}").isID(ofSortedTags: [Tag("\u{e9}")], variant: .none))
        // One pack with two canonically equal tags: refused, as before.
        var manifest = ManifestTests.valid()
        let tags = [Tag("e\u{301}"), Tag("\u{e9}")]
        manifest.packs[1].tags = tags
        manifest.packs[1].id = PackID("e\u{301}+\u{e9}")
        manifest.tags = [TagDescriptor(tag: tags[0], packs: [manifest.packs[1].id]), TagDescriptor(tag: tags[1], packs: [manifest.packs[1].id]),
                         TagDescriptor(tag: Tag("Level1"), packs: [PackID("Level1+Level2")]), TagDescriptor(tag: Tag("Level2"), packs: [PackID("Level1+Level2"), PackID("Level2")])]
            .sorted { $0.tag < $1.tag }
        manifest.packs.sort { $0.id == .base ? true : ($1.id == .base ? false : $0.id < $1.id) }
        manifest.bundleVersion = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs)
        #expect(throws: ManifestError.self) { try Manifest.decode(manifest.encoded()) }
        do {
            _ = try Manifest.decode(manifest.encoded())
        } catch {
            #expect(error.kind == .inconsistent && error.message.contains("does not match its tags"), "\(error)")
        }
        // The same manifest with one of the two tags is valid: the refusal is the pair's.
        manifest.packs = manifest.packs.map { pack in
            var pack = pack
            if pack.tags == tags { pack.tags = [tags[1]]; pack.id = PackID(tags: [tags[1]]) }
            return pack
        }
        manifest.tags.removeAll { $0.tag.name == "e\u{301}" && $0.tag.name.utf8.count == 3 }
        manifest.tags = manifest.tags.map { descriptor in
            var descriptor = descriptor
            if descriptor.tag == tags[1] { descriptor.packs = [PackID(tags: [tags[1]])] }
            return descriptor
        }
        manifest.packs.sort { $0.id == .base ? true : ($1.id == .base ? false : $0.id < $1.id) }
        manifest.bundleVersion = Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs)
        #expect(Self.compare(manifest.encoded()) == manifest)
    }

    /// The bundle version hashed line by line is the hash of all lines as one text.
    @Test func bundleVersionIsTheHashOfItsText() {
        let manifest = Self.rich()
        var text = "odrfs-bundle-v1\nindex \(manifest.index.sha256.hex)\n"
        for pack in manifest.packs { text += "pack \(pack.id.rawValue) \(pack.sha256.hex)\n" }
        text += "variant tcf astc,etc2 default astc rule etc2 1048576 2\n"
        #expect(Manifest.computeBundleVersion(index: manifest.index.sha256, packs: manifest.packs, variants: manifest.variants)
                == ContentHash.of(Array(text.utf8)))
        #expect(manifest.bundleVersion == ContentHash.of(Array(text.utf8)))
    }
}
