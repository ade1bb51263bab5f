import Foundation
import ODRFSCore
import Testing
@testable import ODRFSBuild

/// A file name may start with a combining mark, which Swift joins with the "/" before it
/// into one `Character`: paths are split on the byte, so the file is scanned, matched by its
/// tag's pattern, packed and found by path like any other.
@Suite struct CombiningNameBuildTests {
    @Test func aNameStartingWithACombiningMarkIsPackedUnderItsTag() throws {
        let tree = try TestTree()
        try tree.write("res/voice/\u{0489}intro.txt", "hello\n")
        try tree.write("res/odr.yaml", "tags:\n  Voice: [\"voice/**\"]\n")
        _ = try tree.builder("res").build(into: tree.path + "/dist")
        let manifest = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: tree.path + "/dist/manifest.json")))
        let index = try FileIndex(contentsOf: tree.path + "/dist/" + manifest.index.file)
        let file = try #require(index.lookup(path: "voice/\u{0489}intro.txt"))
        let pack = try #require(index.entry(file)?.pack)
        #expect(manifest.pack(pack).id.rawValue == "Voice")
        #expect(try Glob("voice/*.txt").matches("voice/\u{0489}intro.txt"))
    }
}
