import Foundation
import Testing
@testable import ODRFSCore

@Suite struct ValueTypeTests {
    @Test func packIDJoinsSortedUniqueTags() {
        #expect(PackID(tags: [Tag("Level2"), Tag("Level1"), Tag("Level2")]).rawValue == "Level1+Level2")
        #expect(PackID(tags: []) == .base)
        #expect(PackID.base.rawValue == "base")
    }

    @Test func tagsSortByBytes() {
        #expect([Tag("b"), Tag("B"), Tag("a")].sorted().map(\.name) == ["B", "a", "b"])
    }

    @Test(arguments: ["", "base", "a+b", "a/b", "a,b", "a\u{7}b"])
    func invalidTagNames(_ name: String) {
        #expect(Tag(name).validationProblem != nil)
    }

    /// The control-character check compares scalar values: it must match exactly the scalars
    /// whose general category is Cc, over all of Unicode; and tag names use it.
    @Test func controlCharactersAreExactlyCategoryCc() {
        var mismatches: [UInt32] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            if Tag.isControl(scalar) != (scalar.properties.generalCategory == .control) { mismatches.append(value) }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10).map { String($0, radix: 16) })")
        for control in ["\u{0}", "\u{1F}", "\u{7F}", "\u{85}", "\u{9F}"] {
            #expect(Tag("a" + control + "b").validationProblem != nil, "\(control.unicodeScalars.first!.value)")
        }
        for other in ["\u{A0}", "\u{AD}", "\u{200B}", "\u{2028}", "\u{FEFF}"] {
            #expect(Tag("a" + other + "b").validationProblem == nil, "\(other.unicodeScalars.first!.value)")
        }
    }

    @Test func validTagNames() {
        #expect(Tag("Level 1").validationProblem == nil)
        #expect(Tag("Café").validationProblem == nil)
    }

    @Test func tagsAndIDsEncodeAsPlainStrings() throws {
        let data = try JSONEncoder().encode([Tag("Italy")])
        #expect(String(decoding: data, as: UTF8.self) == "[\"Italy\"]")
        #expect(try JSONDecoder().decode([PackID].self, from: Data("[\"a+b\"]".utf8)) == [PackID("a+b")])
    }

    @Test(arguments: [
        ("64M", Int64(64 << 20)), ("64MiB", 64 << 20), ("64 mb", 64 << 20), ("2G", 2 << 30), ("1024", 1024),
        ("1.5GiB", 3 << 29), ("512b", 512), ("1k", 1024), ("3t", 3 << 40),
    ])
    func byteCountParsing(_ text: String, _ expected: Int64) {
        #expect(ByteCount(parsing: text)?.value == expected)
    }

    @Test(arguments: ["", "-1", "M", "1.2.3", "12X", "1e3", ".5G", "99999999999P"])
    func byteCountRejects(_ text: String) {
        #expect(ByteCount(parsing: text) == nil)
    }

    @Test func byteCountArithmeticSaturatesInsteadOfTrapping() {
        // A decoded status or a command line can carry any Int64: sums must not trap.
        #expect((ByteCount(.max) + ByteCount(1)).value == .max)
        #expect((ByteCount(.min) - ByteCount(1)).value == .min)
        #expect((ByteCount(.max) - ByteCount(-5)).value == .max)
        var total = ByteCount(.max - 1)
        total += ByteCount(10)
        #expect(total.value == .max)
        total -= ByteCount(.max)
        #expect(total == .zero)
        #expect((ByteCount(3) + ByteCount(4)).value == 7 && (ByteCount(3) - ByteCount(4)).value == -1)
    }

    @Test func byteCountDescription() {
        #expect(ByteCount(512).description == "512 B")
        #expect(ByteCount(0).description == "0 B")
        #expect(ByteCount(1024).description == "1 KiB")
        #expect(ByteCount(Int64(12.5 * 1048576)).description == "12.5 MiB")
        #expect(ByteCount(-2048).description == "-2 KiB")
        #expect((ByteCount(3) + ByteCount(4) - ByteCount(2)).value == 5)
    }

    @Test func byteCountEncodesAsInteger() throws {
        #expect(String(decoding: try JSONEncoder().encode([ByteCount(42)]), as: UTF8.self) == "[42]")
    }

    @Test func contentHashValidates() throws {
        let good = String(repeating: "aB", count: 32)
        #expect(ContentHash(hex: good)?.hex == good.lowercased())
        #expect(ContentHash(hex: String(repeating: "a", count: 63)) == nil)
        #expect(ContentHash(hex: String(repeating: "g", count: 64)) == nil)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([ContentHash].self, from: Data("[\"abc\"]".utf8))
        }
        #expect(ContentHash.of(Array("abc".utf8)).hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    // The last three: a "/" followed by a combining mark is one Swift Character, so a split
    // on characters kept "../\u{0489}x" whole and let its ".." through (found by review).
    @Test(arguments: ["", "/a", "a/../b", "..", "a//b", "a\\b", "a/\0", "./a", "a/", "../\u{0489}x", "a/\u{0489}../../x/..", "./\u{0489}"])
    func unsafePaths(_ path: String) {
        #expect(SafeRelativePath.problem(with: path) != nil)
    }

    @Test func safePath() {
        #expect(SafeRelativePath.problem(with: "packs/abc.tar") == nil)
        #expect(SafeRelativePath.problem(with: "packs/\u{0489}x.tar") == nil, "a name may start with a combining mark")
        #expect("a/\u{0489}b//c/".slashSeparated() == ["a", "\u{0489}b", "c"])
        #expect("/a//".slashSeparated(omittingEmpty: false) == ["", "a", "", ""])
        #expect(SafeRelativePath.problem(with: "a..b/c") == nil)
    }
}
