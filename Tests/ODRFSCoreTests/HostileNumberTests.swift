import Foundation
import Testing
@testable import ODRFSCore

/// Numbers from outside (headers, manifests, stat) that used to trap: each case crashed the
/// process before it was bounded (issue 12, defect 2).
@Suite struct HostileNumberTests {
    @Test func httpDateYearsOutsideFourDigitsAreNotDates() {
        #expect(HTTPDate.parse("Sun, 06 Nov -2147483648 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 2147483647 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 9999999999 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 0 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Fri, 31 Dec 9999 23:59:59 GMT") == 253_402_300_799)
        #expect(HTTPDate.parse("Mon, 01 Jan 0001 00:00:00 GMT") == -62_135_596_800)
    }

    @Test func httpDateFormatClampsAnyTime() {
        #expect(HTTPDate.format(secondsSinceEpoch: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(secondsSinceEpoch: Int.max) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(secondsSinceEpoch: Int.min) == "Mon, 01 Jan 0001 00:00:00 GMT")
        // Years whose tm_year + 1900 overflowed an Int32.
        #expect(HTTPDate.format(secondsSinceEpoch: 67_767_976_233_316_800) == "Fri, 31 Dec 9999 23:59:59 GMT")
    }

    @Test func mtimesAfter2262Saturate() {
        #expect(Timestamp(seconds: 1_700_000_000, nanoseconds: 5).totalNanoseconds == 1_700_000_000_000_000_005)
        #expect(Timestamp(seconds: 1 << 40, nanoseconds: 0).totalNanoseconds == .max)
        #expect(Timestamp(seconds: -(1 << 40), nanoseconds: 0).totalNanoseconds == .min)
        #expect(Timestamp(seconds: Int64.max / 1_000_000_000, nanoseconds: 999_999_999).totalNanoseconds == .max)
    }

    @Test func indexEntryOffsetsNeverTrap() {
        let entry = IndexEntry(kind: .regularFile, permissions: 0o644, size: .max, modificationTime: Timestamp(seconds: 0, nanoseconds: 0),
                               pack: .base, dataOffset: .max, parent: .root, subdirectoryCount: 0)
        #expect(entry.packOffset == .max)
        #expect(entry.packEnd == .max)
    }

    @Test func packVerifierPrefixNeverTraps() {
        var hasher = ChunkHasher(chunkSize: ByteCount(1))
        hasher.update([UInt8]([1, 2]))
        let descriptor = PackDescriptor(id: .base, tags: [], file: "packs/x.tar", bytes: ByteCount(2), sha256: ContentHash.of([1, 2]),
                                        chunks: hasher.finalizeChunks(), files: 1)
        var verifier = PackVerifier(expected: descriptor, chunkSize: ByteCount(1))
        [UInt8]([1, 2]).withUnsafeBytes { verifier.update($0) }
        #expect(verifier.verifiedPrefix == ByteCount(2))
    }
}
