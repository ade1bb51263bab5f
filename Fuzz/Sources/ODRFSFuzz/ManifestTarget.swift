import Foundation
import ODRFSCore

/// manifest.json as a mount reads it from an origin or its offline cache, through
/// `ManifestReader`, checked against `JSONDecoder` on every input both accept.
///
/// The input is tried as the manifest itself, and, from its first 48 bytes, as six numbers
/// (chunk size, index bytes and entries, two pack sizes, a file count) put into an otherwise
/// valid manifest, so that hostile numbers reach validation without the mutator first having
/// to keep the JSON well formed.
enum ManifestTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        decodeAndUse(Data(bytes))
        guard bytes.count >= 48 else { return }
        let numbers = (0..<6).map { Int64(bitPattern: bytes.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) }
        var text = template
        for (placeholder, number) in zip(["@CHUNK@", "@INDEXBYTES@", "@ENTRIES@", "@BASEBYTES@", "@PACKBYTES@", "@FILES@"], numbers) {
            text = text.replacingOccurrences(of: placeholder, with: String(number))
        }
        decodeAndUse(Data(text.utf8))
    }

    private static func decodeAndUse(_ data: Data) {
        guard let manifest = try? Manifest.decode(data) else { return }
        // The reader behind `decode` accepts nothing JSONDecoder refuses, and agrees with it.
        check((try? Manifest.decodeWithFoundation(data)) == manifest, "ManifestReader and JSONDecoder disagree")
        // Everything a validated manifest promises the daemon may use without further checks.
        for number in 0..<manifest.packs.count {
            let pack = manifest.pack(PackNumber(UInt32(number)))
            check(manifest.packNumber(of: pack.id) != nil, "pack \(number) cannot be found by its id")
            // A validated compressed pack's frame table builds again and maps every chunk.
            if pack.compression != nil {
                let table = try? FrameTable(validating: pack, chunkSize: manifest.chunkSize)
                check(table != nil, "pack \(number)'s frame table validated in the manifest but not alone")
                if let table {
                    for chunk in 0..<table.count {
                        check(table.compressedRange(ofChunk: chunk).upperBound <= table.compressedBytes, "frame \(chunk) past the file")
                    }
                }
            }
        }
        for tag in manifest.tags {
            for number in manifest.packs(for: tag.tag) {
                _ = manifest.pack(number)
            }
            _ = manifest.preservationPriority(of: tag.tag)
        }
        // Every pack's variant names declared keys and values, and the base packs hold untagged files.
        let declarations = manifest.variantDeclarations
        for pack in manifest.packs {
            for pair in pack.variantAssignment.values {
                check(declarations.contains { $0.key == pair.key && $0.values.contains(pair.value) }, "pack \(pack.id) has an undeclared variant")
            }
        }
        for number in manifest.basePacks { check(manifest.pack(number).tags.isEmpty, "a base pack with tags") }
        check((try? Manifest.decode(manifest.encoded())) != nil, "a validated manifest does not decode once re-encoded")
    }

    /// Fuzz/Corpus/manifest/tiny.json with its sizes and counts as placeholders.
    private static let template = #"""
{"bundleVersion":"297fa9df6070bb92ec50d30e366146d4efd01fde0a665b16f22722f8813d15d0","chunkSize":@CHUNK@,"format":1,"index":{"bytes":@INDEXBYTES@,"entries":@ENTRIES@,"file":"index/03ece9a147dc48ec84dfdbccd08ff24709c8553dcc1ff2a41d158b04a826e0b8.odrx","sha256":"03ece9a147dc48ec84dfdbccd08ff24709c8553dcc1ff2a41d158b04a826e0b8"},"initialInstall":[],"packs":[{"bytes":@BASEBYTES@,"chunks":["5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef"],"file":"packs/5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef.tar","files":0,"id":"base","sha256":"5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef","tags":[]},{"bytes":@PACKBYTES@,"chunks":["2c032ddac9e19ea9c04b17e5c47592df9d3e574e23001f1d0024d426da109dfa"],"file":"packs/2c032ddac9e19ea9c04b17e5c47592df9d3e574e23001f1d0024d426da109dfa.tar","files":@FILES@,"id":"A","sha256":"2c032ddac9e19ea9c04b17e5c47592df9d3e574e23001f1d0024d426da109dfa","tags":["A"]}],"prefetch":[],"tags":[{"packs":["A"],"preservationPriority":0,"tag":"A"}]}
"""#
}
