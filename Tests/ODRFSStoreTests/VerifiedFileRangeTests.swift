import Foundation
import Logging
import Synchronization
import TestSupport
import Testing
@testable import ODRFSStore

/// What a reader of a pack file may read (issue 27, item 4): a proven prefix and proven
/// ranges past it; ranges merge, join the prefix when it reaches them, and answer the waiters
/// whose bytes they complete; nothing is let through that was not released.
@Suite struct VerifiedFileRangeTests {
    static func file(size: Int64) throws -> VerifiedFile {
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        return VerifiedFile(descriptor: fd, size: size, verified: 0)
    }

    @Test func rangesMergeAndJoinThePrefix() throws {
        let file = try Self.file(size: 1_000)
        file.release(500..<600)
        file.release(700..<800)
        #expect(file.verifiedRanges == [500..<600, 700..<800])
        #expect(file.isVerified(520..<580) && file.isVerified(700..<800))
        #expect(!file.isVerified(550..<650) && !file.isVerified(0..<1) && !file.isVerified(590..<710))
        file.release(600..<700)
        #expect(file.verifiedRanges == [500..<800] && file.isVerified(590..<710))
        file.release(850..<900)
        file.advance(to: 500)
        #expect(file.verifiedBytes == 800, "the prefix took in the range it reached")
        #expect(file.verifiedRanges == [850..<900])
        file.release(100..<200)   // under the prefix: nothing to record
        #expect(file.verifiedRanges == [850..<900])
        #expect(file.isVerified(0..<800) && !file.isVerified(0..<801))
        #expect(file.isVerified(950..<2_000) == false && file.isVerified(1_000..<2_000), "past the end is empty, hence proven")
        file.release(800..<850)
        #expect(file.verifiedBytes == 900 && file.verifiedRanges.isEmpty)
    }

    @Test func waitersForARangeAreAnsweredWhenItIsWhole() throws {
        let file = try Self.file(size: 1_000)
        let answered = Mutex<[String]>([])
        #expect(!file.whenVerified(400..<600, waiter: 1) { result in answered.withLock { $0.append("a:\(result)") } })
        #expect(!file.whenVerified(0..<10, waiter: 2) { result in answered.withLock { $0.append("b:\(result)") } })
        file.release(400..<500)
        #expect(answered.withLock { $0 }.isEmpty, "half of its bytes answered a waiter")
        file.release(500..<600)
        #expect(answered.withLock { $0 }.count == 1 && answered.withLock { $0 }[0].hasPrefix("a:success"))
        #expect(file.whenVerified(450..<550, waiter: 3) { _ in Issue.record("called although ready") })
        file.fail("origin gone")
        #expect(answered.withLock { $0 }.count == 2 && answered.withLock { $0 }[1].hasPrefix("b:failure"))
        // After a failure, what was proven stays readable and nothing more is released.
        file.release(0..<100)
        #expect(file.isVerified(400..<600) && !file.isVerified(0..<100))
    }

    /// Found in review: a range released ahead joins the prefix when the prefix reaches it;
    /// a stream's unproven bytes written later over it (a plain pack's next buffers, or a new
    /// attempt after bad bytes going over what index chunks released) must not replace it.
    @Test func unprovenWritesNeverReplaceProvenBytes() throws {
        let directory = try TemporaryDirectory()
        let store = try PackStore(root: directory.path, logger: Logger(label: "test"))
        let file = try store.makeTemporaryFile(label: "pack", readableSize: 1_000)
        let verified = try #require(file.verified)
        let good = [UInt8](repeating: 7, count: 1_000)
        let bad = [UInt8](repeating: 0xEE, count: 1_000)
        try good[0..<100].withUnsafeBytes { try file.writeUnlessReleased($0, at: 0) }
        try good[500..<700].withUnsafeBytes { try file.writeProven($0, at: 500, release: true) }
        verified.advance(to: 100)
        try bad[100..<600].withUnsafeBytes { try file.writeUnlessReleased($0, at: 100) }   // over [500, 600): skipped
        try good[100..<500].withUnsafeBytes { try file.writeUnlessReleased($0, at: 100) }
        verified.advance(to: 500)
        #expect(verified.verifiedBytes == 700, "the prefix took in the range released ahead")
        // Now all of [0, 700) is the prefix: a lying buffer over it changes nothing.
        try bad[0..<800].withUnsafeBytes { try file.writeUnlessReleased($0, at: 0) }
        var read = [UInt8](repeating: 0, count: 800)
        #expect(read.withUnsafeMutableBytes { pread(verified.descriptor, $0.baseAddress, 800, 0) } == 800)
        #expect(Array(read[0..<700]) == Array(good[0..<700]), "proven bytes were overwritten")
        #expect(Array(read[700..<800]) == Array(bad[700..<800]), "unproven bytes past what is proven are written")
        file.discard()
    }

    @Test func randomReleasesMatchASimpleModel() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let size: Int64 = 2_000
            let file = try Self.file(size: size)
            var model = [Bool](repeating: false, count: Int(size))
            for _ in 0..<20 {
                if Int.random(in: 0..<5, using: &generator) == 0 {
                    let prefix = Int64.random(in: 0...size, using: &generator)
                    file.advance(to: prefix)
                    for k in 0..<Int(prefix) { model[k] = true }
                } else {
                    let start = Int64.random(in: 0..<size, using: &generator)
                    let end = Int64.random(in: start...min(size, start + 300), using: &generator)
                    file.release(start..<end)
                    for k in Int(start)..<Int(end) { model[k] = true }
                }
            }
            let prefix = model.firstIndex(of: false) ?? Int(size)
            #expect(file.verifiedBytes == Int64(prefix))
            for _ in 0..<50 {
                let start = Int.random(in: 0..<Int(size), using: &generator)
                let end = Int.random(in: start...Int(size), using: &generator)
                #expect(file.isVerified(Int64(start)..<Int64(end)) == model[start..<end].allSatisfy { $0 })
            }
            let ranges = file.verifiedRanges
            #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound }, "ranges touch: \(ranges)")
            #expect(ranges.allSatisfy { $0.lowerBound > file.verifiedBytes })
        }
    }
}
