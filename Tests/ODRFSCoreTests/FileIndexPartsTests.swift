import Foundation
import TestSupport
import Testing
@testable import ODRFSCore

/// Validation in parts on several cores (issue 28): an index checked in parts accepts and
/// refuses exactly what one pass in entry order does, with the same error, and never traps
/// when a part meets a record whose parent lies in a part not checked yet.
@Suite struct FileIndexPartsTests {
    typealias F = FileIndexLayout.Record

    static let tree = FileIndexTests.randomTree(seed: 7, budget: 3_000).root
    static let valid = try! FileIndexWriter(packCount: 3).encode(root: tree)
    /// Small enough that a 3,000-entry index is checked in as many parts as the machine allows.
    static let smallParts: UInt32 = 64

    /// What opening `bytes` gives: nil when valid, else the error's message.
    static func outcome(_ bytes: [UInt8], entriesPerPart: UInt32) -> String? {
        do {
            _ = try FileIndex(bytes: bytes, entriesPerPart: entriesPerPart)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func aValidIndexIsAcceptedInParts() throws {
        let index = try FileIndex(bytes: Self.valid, entriesPerPart: Self.smallParts)
        #expect(index.entryCount > 2_500)
        #expect(index.entriesPerPart == Self.smallParts)
    }

    /// Records damaged at random (150 cases: the suite runs on two cores) (one to three fields each, including parents' child ranges
    /// set to values whose sum overflows): both ways give the same outcome for every case.
    @Test func partsAgreeWithOnePassOnDamagedRecords() {
        var rng = SplitMix(seed: 2026)
        let entries = try! FileIndex(bytes: Self.valid).entryCount
        let fields: [(offset: Int, wide: Bool)] = [(F.parent, false), (F.data, true), (F.count, false), (F.nameOffset, true),
                                                   (F.nameLength, false), (F.pack, false), (F.size, true), (F.kind, false)]
        let extremes: [UInt64] = [0, 1, 0xFFFF_FFFF, 0xFFFF_FFFF_FFFF_FFFF, 1 << 32, UInt64(entries), UInt64(entries - 1)]
        var refused = 0
        for trial in 0..<150 {
            var bytes = Self.valid
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                let entry = Int(rng.next() % UInt64(entries))
                let field = fields[Int(rng.next() % UInt64(fields.count))]
                let value = rng.next() % 2 == 0 ? extremes[Int(rng.next() % UInt64(extremes.count))] : rng.next() % UInt64(entries)
                let at = FileIndexHostileTests.recordsStart + entry * FileIndexLayout.recordSize + field.offset
                if field.offset == F.kind {
                    bytes[at] = UInt8(truncatingIfNeeded: value)
                } else if field.wide {
                    withUnsafeBytes(of: value.littleEndian) { for (i, b) in $0.enumerated() { bytes[at + i] = b } }
                } else {
                    withUnsafeBytes(of: UInt32(truncatingIfNeeded: value).littleEndian) { for (i, b) in $0.enumerated() { bytes[at + i] = b } }
                }
            }
            let single = Self.outcome(bytes, entriesPerPart: .max)
            let parts = Self.outcome(bytes, entriesPerPart: Self.smallParts)
            #expect(single == parts, "trial \(trial)")
            if single != nil { refused += 1 }
        }
        // The damage is real: most cases are refused.
        #expect(refused > 110)
    }

    /// Two damaged regular files far apart: the error names the first, as one pass would.
    @Test func theFirstErrorInEntryOrderIsReported() throws {
        let index = try FileIndex(bytes: Self.valid)
        let files = (0..<UInt32(index.entryCount)).filter { index.entry(EntryNumber($0))?.kind == .regularFile }
        let first = files[files.count / 3], last = files[files.count - 1]
        var bytes = Self.valid
        for entry in [first, last] {
            bytes[FileIndexHostileTests.recordsStart + Int(entry) * FileIndexLayout.recordSize + F.kind] = 0xEE
        }
        let message = try #require(Self.outcome(bytes, entriesPerPart: Self.smallParts))
        #expect(message.contains("entry \(first) has unknown kind"), "\(message)")
        #expect(Self.outcome(bytes, entriesPerPart: .max) == message)
    }

    /// A directory whose child range would overflow, its children checked in a later part
    /// (before the directory's own part has refused it): they must be refused, not trap.
    @Test func aChildNeverTrustsItsParentsUncheckedRange() throws {
        let index = try FileIndex(bytes: Self.valid)
        // Far enough apart to be in different parts whatever the number of cores.
        let gap = UInt32(index.entryCount / 4 + 1)
        let directory = try #require((0..<UInt32(index.entryCount)).first { n in
            let children = index.children(of: EntryNumber(n))
            return n > 0 && !children.isEmpty && children.lowerBound - n >= gap
        })
        var bytes = Self.valid
        let at = FileIndexHostileTests.recordsStart + Int(directory) * FileIndexLayout.recordSize
        withUnsafeBytes(of: UInt64(0xFFFF_FFFF).littleEndian) { for (i, b) in $0.enumerated() { bytes[at + F.data + i] = b } }
        withUnsafeBytes(of: UInt32(0xFFFF_FFFF).littleEndian) { for (i, b) in $0.enumerated() { bytes[at + F.count + i] = b } }
        let message = try #require(Self.outcome(bytes, entriesPerPart: Self.smallParts))
        #expect(message == Self.outcome(bytes, entriesPerPart: .max))
        #expect(message.contains("entry \(directory) has"), "\(message)")
    }

    /// The manifest's checks run in parts too, and report the first file past its pack's end.
    @Test func manifestChecksInPartsReportTheFirstFile() throws {
        let index = try FileIndex(bytes: Self.valid, entriesPerPart: Self.smallParts)
        let oneIndex = try FileIndex(bytes: Self.valid, entriesPerPart: .max)
        // Packs just large enough for every file, then one byte short for the largest end.
        var ends = [UInt64](repeating: 0, count: 3)
        var firstAtEnd = [UInt32](repeating: .max, count: 3)
        for n in 0..<UInt32(index.entryCount) {
            guard let entry = index.entry(EntryNumber(n)), entry.kind == .regularFile, let pack = entry.pack else { continue }
            let end = entry.dataOffset + entry.size
            if end > ends[Int(pack.rawValue)] { ends[Int(pack.rawValue)] = end; firstAtEnd[Int(pack.rawValue)] = n }
        }
        // Every pack exactly as long as its files reach.
        var manifest = FileIndexManifestTests.manifest(packCount: 3, entries: index.entryCount)
        for p in 0..<3 { manifest.packs[p].bytes = ByteCount(Int64(ends[p])) }
        try index.validate(against: manifest)
        // One byte short: the first file (in entry order) that reaches a pack's end is past it.
        for p in 0..<3 { manifest.packs[p].bytes = ByteCount(Int64(ends[p]) - 1) }
        let first = try #require(firstAtEnd.min())
        let inParts = #expect(throws: FileIndexError.self) { try index.validate(against: manifest) }
        let inOne = #expect(throws: FileIndexError.self) { try oneIndex.validate(against: manifest) }
        #expect(inParts?.message == inOne?.message)
        #expect(inParts?.message.hasPrefix("entry \(first) ") == true, "\(inParts?.message ?? "")")
    }
}
