import Foundation
import ODRFSCore
import Testing
@testable import ODRFSBuild

/// `odrfs build` records every file's SHA-256 in the index (what updates match cached files by).
@Suite struct BundleBuilderDigestTests {
    @Test func everyFileCarriesTheHashOfItsSourceBytes() throws {
        let tree = try TestTree()
        try tree.copyExample("game", to: "game")
        _ = try tree.builder("game").build(into: tree.path + "/dist")
        let (_, index) = try BundleBuilderTests.load(tree.path + "/dist")
        #expect(index.hasFileDigests)
        var files = 0
        for raw in 0..<UInt32(index.entryCount) {
            let number = EntryNumber(raw)
            guard index.entry(number)?.kind == .regularFile else {
                #expect(index.sha256(of: number) == nil)
                continue
            }
            let path = index.path(of: number)
            let source = try Data(contentsOf: URL(fileURLWithPath: tree.path + "/game/" + path))
            #expect(index.sha256(of: number) == ContentHash.of(source), "\(path)")
            files += 1
        }
        #expect(files == 10)
    }
}
