import Foundation
import Logging
import ODRFSCore
import ODRFSFetch
import ODRFSRuntime

/// The cache is the acquisition pipeline's sink: a download writes into a
/// ``TemporaryFile`` under `tmp/` (with its ``VerifiedFile`` for progressive readers) and
/// is published into `packs/` or `index/` by rename, or discarded. The fetcher sees only
/// ``DownloadSink``.
extension PackStore: DownloadSink {
    public func makeFile(label: String, readableSize: Int64?) throws(FetchError) -> TemporaryFile {
        do throws(StoreError) {
            let file = try makeTemporaryFile(label: label, readableSize: readableSize)
            guard readableSize == nil || file.verified != nil else {
                file.discard()
                throw StoreError(.io, "no readable download file")
            }
            return file
        } catch {
            throw error.fetchError
        }
    }

    public func publish(_ file: TemporaryFile, as pack: PackDescriptor) throws(FetchError) -> CachedPack {
        do throws(StoreError) { return try publish(file, as: pack, at: Date()) } catch { throw error.fetchError }
    }

    public func publish(_ file: TemporaryFile, index: IndexReference) throws(FetchError) {
        do throws(StoreError) {
            if isShared { try publishSharedIndex(file, index: index) } else { try publish(file, to: path(of: index)) }
        } catch {
            throw error.fetchError
        }
    }
}

extension TemporaryFile: DownloadSinkFile {
    public var readable: VerifiedFile? { verified }

    public func append(_ bytes: UnsafeRawBufferPointer) throws(FetchError) {
        do throws(StoreError) { try write(bytes) } catch { throw error.fetchError }
    }

    public func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(FetchError) {
        do throws(StoreError) { try writeUnlessReleased(bytes, at: offset) } catch { throw error.fetchError }
    }

    public func writeVerified(_ bytes: UnsafeRawBufferPointer, at offset: Int64, release: Bool) throws(FetchError) {
        do throws(StoreError) { try writeProven(bytes, at: offset, release: release) } catch { throw error.fetchError }
    }

    public func provenSpans(overlapping range: Range<Int64>) -> [Range<Int64>] {
        verified?.provenSpans(overlapping: range) ?? []
    }

    public func resize(to size: Int64) throws(FetchError) {
        do throws(StoreError) { try truncate(to: size) } catch { throw error.fetchError }
    }

    public func release(verifiedUpTo bytes: Int64) {
        verified?.advance(to: bytes)
    }
}

extension StoreError {
    /// How a download reports a failure of the cache: out of space, or local I/O.
    var fetchError: FetchError {
        FetchError(kind == .noSpace ? .noSpace : kind == .readOnly ? .readOnlyCache : .localIO, "cache: \(message)")
    }
}

/// The mount's pipeline: downloads into the cache.
public typealias PackDownloader = PackPipeline<PackStore>

extension PackPipeline where Sink == PackStore {
    public init(origin: any Origin, store: PackStore, chunkSize: ByteCount, io: IOExecutor = .cache,
                wire: WireByteCounter = WireByteCounter(), logger: Logger) {
        self.init(origin: origin, sink: store, chunkSize: chunkSize, io: io, wire: wire, logger: logger)
    }

    /// The cache this pipeline publishes into.
    public var store: PackStore { sink }
}
