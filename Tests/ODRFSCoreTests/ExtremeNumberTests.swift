import Foundation
import Testing
@testable import ODRFSCore

/// Every number of a manifest and of an index record replaced in turn by extreme values:
/// validation may refuse, never trap, and whatever it accepts is within ``BundleLimits``.
@Suite struct ExtremeNumberTests {
    static let extremes: [String] = [
        "-9223372036854775808", "-1", "0", "1", "1023", "1024", "4503599627370496", "4503599627370497",
        "9223372036854775807", "9223372036854775808", "18446744073709551615", "1e308", "-0", "4294967295", "4294967296",
    ]

    @Test func everyManifestNumberSetToAnExtreme() throws {
        let text = String(decoding: ManifestTests.valid().encoded(), as: UTF8.self)
        let numbers = try NSRegularExpression(pattern: "(?<=: )-?[0-9][0-9.e]*")
        let matches = numbers.matches(in: text, range: NSRange(text.startIndex..., in: text))
        #expect(matches.count > 10)
        var accepted = 0
        for match in matches {
            let range = try #require(Range(match.range, in: text))
            for value in Self.extremes {
                var mutated = text
                mutated.replaceSubrange(range, with: value)
                guard let manifest = try? Manifest.decode(Data(mutated.utf8)) else { continue }
                accepted += 1
                #expect(manifest.totalBytes <= BundleLimits.maxTotalBytes)
                #expect(BundleLimits.chunkSizeRange.contains(manifest.chunkSize))
                #expect(manifest.index.bytes <= BundleLimits.maxIndexBytes)
                for pack in manifest.packs {
                    #expect(pack.bytes.value >= 0 && pack.files >= 0)
                }
            }
        }
        // Priorities, sizes that keep the chunk count, the same value as before...
        #expect(accepted > 0)
    }

    @Test func everyIndexNumberSetToAnExtreme() throws {
        let manifest = FileIndexManifestTests.manifest()
        let u64: [UInt64] = [0, 1, UInt64(Int64.max), UInt64(Int64.max) + 1, .max, .max - 1, 1 << 52]
        let u32: [UInt32] = [0, 1, 2, 7, .max, .max - 1, 1 << 31]
        var accepted = 0
        func check(_ bytes: [UInt8]) {
            guard let index = try? FileIndex(bytes: bytes) else { return }
            guard (try? index.validate(against: manifest)) != nil else { return }
            accepted += 1
            for raw in 0..<UInt32(index.entryCount) {
                guard let entry = index.entry(EntryNumber(raw)) else { continue }
                if let pack = entry.pack {
                    let descriptor = manifest.pack(pack)   // traps if out of range
                    #expect(entry.packEnd <= descriptor.bytes.value)
                    #expect(Int64(entry.dataOffset) + Int64(entry.size) == entry.packEnd)
                }
                _ = index.symlinkTarget(of: EntryNumber(raw))
                _ = index.path(of: EntryNumber(raw))
            }
        }
        for entry in 0..<7 {
            for field in stride(from: 0, to: FileIndexLayout.recordSize, by: 4) {
                let offset = FileIndexHostileTests.record(entry, field)
                for value in u32 { check(FileIndexHostileTests.patched(offset, value)) }
                if field % 8 == 0 { for value in u64 { check(FileIndexHostileTests.patched64(offset, value)) } }
            }
        }
        for field in stride(from: 8, to: FileIndexLayout.headerSize, by: 4) {
            for value in u32 { check(FileIndexHostileTests.patched(field, value)) }
            if field % 8 == 0 { for value in u64 { check(FileIndexHostileTests.patched64(field, value)) } }
        }
        #expect(accepted > 0)
    }
}
