import FaultOriginSupport
import Foundation
import ODRFSCore
import Synchronization
import Testing
import TestSupport
@testable import ODRFSFetch

/// A sink that records what the pipeline does with it: bytes written (to a real file, for
/// the source's read-back), what was released to readers, what was published or discarded.
final class RecordingSink: DownloadSink {
    final class File: DownloadSinkFile {
        let descriptor: Int32
        let path: String
        let sized: Bool
        let releases = Mutex<[Int64]>([])
        /// Ranges released ahead of the prefix (index chunks, demanded ranges).
        let aheadReleases = Mutex<[Range<Int64>]>([])
        let discarded = Atomic<Bool>(false)

        init(path: String, sized: Bool) {
            self.path = path
            self.sized = sized
            self.descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        }

        deinit { close(descriptor) }

        var readable: File? { sized ? self : nil }

        func append(_ bytes: UnsafeRawBufferPointer) throws(FetchError) {
            guard bytes.isEmpty || Glibc.write(descriptor, bytes.baseAddress, bytes.count) == bytes.count else {
                throw FetchError(.localIO, "short write")
            }
        }

        /// Positioned writes: unproven ones skip what was released ahead, as the cache's do.
        func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FetchError) {
            let end = offset + Int64(bytes.count)
            let released = provenSpans(overlapping: offset..<end)
            var position = offset
            for range in released.sorted(by: { $0.lowerBound < $1.lowerBound }) where range.upperBound > position && range.lowerBound < end {
                if range.lowerBound > position {
                    try positioned(UnsafeRawBufferPointer(rebasing: bytes[Int(position - offset)..<Int(range.lowerBound - offset)]), at: position)
                }
                position = max(position, range.upperBound)
            }
            if position < end { try positioned(UnsafeRawBufferPointer(rebasing: bytes[Int(position - offset)...]), at: position) }
        }

        func writeVerified(_ bytes: UnsafeRawBufferPointer, at offset: Int64, release: Bool) throws(FetchError) {
            try positioned(bytes, at: offset)
            if release { aheadReleases.withLock { $0.append(offset..<(offset + Int64(bytes.count))) } }
        }

        private func positioned(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FetchError) {
            guard bytes.isEmpty || pwrite(descriptor, bytes.baseAddress, bytes.count, off_t(offset)) == bytes.count else {
                throw FetchError(.localIO, "short write")
            }
        }

        func provenSpans(overlapping range: Range<Int64>) -> [Range<Int64>] {
            let prefix = releases.withLock { $0.max() ?? 0 }
            return ([0..<prefix] + aheadReleases.withLock { $0 }).filter { $0.overlaps(range) }
        }

        func resize(to size: Int64) throws(FetchError) {
            guard ftruncate(descriptor, off_t(size)) == 0, lseek(descriptor, off_t(size), SEEK_SET) >= 0 else {
                throw FetchError(.localIO, "cannot resize")
            }
        }

        func release(verifiedUpTo bytes: Int64) { releases.withLock { $0.append(bytes) } }

        func discard() { discarded.store(true, ordering: .relaxed) }

        var wasDiscarded: Bool { discarded.load(ordering: .relaxed) }

        var contents: [UInt8] { (try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))) ?? [] }
    }

    let directory: String
    let made = Mutex<[File]>([])
    let published = Mutex<[(PackID, [UInt8])]>([])

    init(directory: String) { self.directory = directory }

    func makeFile(label: String, readableSize: Int64?) throws(FetchError) -> File {
        let file = File(path: directory + "/\(label)-\(UUID().uuidString)", sized: readableSize != nil)
        made.withLock { $0.append(file) }
        return file
    }

    func publish(_ file: File, as pack: PackDescriptor) throws(FetchError) -> PackID {
        published.withLock { $0.append((pack.id, file.contents)) }
        return pack.id
    }

    func publish(_ file: File, index: IndexReference) throws(FetchError) {}
}

/// The pipeline with a fake sink (issue 22, item 3): what reaches the sink is what was
/// verified, whatever the origin does; failures discard; stepping aside resumes.
@Suite(.timeLimit(.minutes(1)))
struct PackPipelineTests {
    static func withPipeline(_ server: FaultOrigin, _ body: (PackPipeline<RecordingSink>, RecordingSink) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        let sink = RecordingSink(directory: directory.path)
        try await withHTTPOrigin(server.baseURL) { origin in
            try await body(PackPipeline(origin: origin, sink: sink, chunkSize: .kibibytes(64), logger: LogCapture().logger), sink)
        }
    }

    @Test func aResetDownloadPublishesExactlyTheVerifiedPack() async throws {
        let good = testBytes(300_000, seed: 3)
        let pack = PackDownloaderHTTPTests.descriptor(for: good)
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, good)
            server.script("/" + pack.file, [.reset(after: 70_000)])
            try await Self.withPipeline(server) { pipeline, sink in
                let reports = Mutex<[Int64]>([])
                let published = try await pipeline.fetch(pack) { progress in
                    reports.withLock { $0.append(progress.verified.value) }
                }
                #expect(published == pack.id)
                let record = sink.published.withLock { $0 }
                #expect(record.count == 1 && record.first?.1 == good)
                let file = try #require(sink.made.withLock { $0.first })
                let releases = file.releases.withLock { $0 }
                // Only whole verified chunks are released, in order; the tail on publication.
                #expect(releases == releases.sorted() && releases.allSatisfy { $0 % 65_536 == 0 && $0 <= 262_144 }, "\(releases)")
                #expect(releases.last == 262_144)
                #expect(!file.wasDiscarded)
                #expect(reports.withLock { $0 }.last == 262_144)
            }
        }
    }

    @Test func badBytesAreDiscardedNeverPublishedNorReleased() async throws {
        let good = testBytes(300_000, seed: 4)
        var bad = good
        bad[140_000] ^= 0x01
        let pack = PackDownloaderHTTPTests.descriptor(for: good)
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, bad)
            try await Self.withPipeline(server) { pipeline, sink in
                let error = await #expect(throws: FetchError.self) { try await pipeline.fetch(pack) }
                #expect(error?.kind == .corrupt)
                #expect(sink.published.withLock { $0 }.isEmpty)
                let file = try #require(sink.made.withLock { $0.first })
                #expect(file.wasDiscarded)
                // The chunk holding byte 140,000 (the third) is never released.
                #expect(file.releases.withLock { $0 }.allSatisfy { $0 <= 131_072 })
            }
        }
    }

    @Test func aDownloadThatStepsAsideResumesWhereItStopped() async throws {
        let good = testBytes(400_000, seed: 5)
        let pack = PackDownloaderHTTPTests.descriptor(for: good)
        try await withFaultOrigin { server in
            server.setFile("/" + pack.file, good)
            try await Self.withPipeline(server) { pipeline, sink in
                let buffers = Atomic<Int>(0)
                let resumed = Atomic<Int>(0)
                let pacing = DownloadPacing(beforeWrite: { _ in
                    buffers.wrappingAdd(1, ordering: .relaxed).newValue == 2 ? .stepAside : .proceed
                }, untilResumable: {
                    _ = resumed.wrappingAdd(1, ordering: .relaxed)
                })
                try await pipeline.fetch(pack, pacing: pacing)
                #expect(resumed.load(ordering: .relaxed) == 1)
                #expect(sink.published.withLock { $0 }.first?.1 == good)
                let requests = server.requests(of: "/" + pack.file)
                #expect(requests.count == 2)
                #expect(requests.last?.range?.hasPrefix("bytes=") == true, "the second request resumes with a range")
            }
        }
    }
}
