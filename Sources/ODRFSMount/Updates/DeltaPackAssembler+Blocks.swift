import Foundation
import ODRFSCore
import ODRFSFetch
import ODRFSStore

/// Chunk copies (see ``LocalChunks``): each chunk is read from its local pack and hashed
/// before it is written; a chunk whose bytes no longer hash as the new index says (a cached
/// pack changed or went under us, or a colliding hash) is not written but fetched instead.
extension DeltaPackAssembler {
    /// The cached packs of the mounted revision that copies read from, each opened once.
    struct SourcePacks: ~Copyable {
        let mounted: Manifest
        let store: PackStore
        private var open: [PackNumber: Int32] = [:]
        private var openByHash: [String: Int32] = [:]

        init(mounted: Manifest, store: PackStore) {
            self.mounted = mounted
            self.store = store
        }

        deinit { for fd in Array(open.values) + Array(openByHash.values) { close(fd) } }

        mutating func descriptor(of pack: PackNumber) throws(FetchError) -> Int32 {
            if let fd = open[pack] { return fd }
            guard let descriptor = mounted.packIfPresent(pack) else { throw FetchError(.localIO, "no source pack") }
            let path = store.path(of: descriptor)
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw FetchError(.localIO, "cannot open the cached pack \(path): \(String(cString: strerror(errno)))") }
            open[pack] = fd
            return fd
        }

        /// A cached pack of any revision or bundle, by its descriptor; nil when it is gone.
        /// One such pack is open at a time (copies come grouped by pack): a store may hold
        /// thousands, more than the descriptors a daemon should spend.
        mutating func descriptor(of pack: PackDescriptor) -> Int32? {
            if let fd = openByHash[pack.sha256.hex] { return fd }
            for fd in openByHash.values { close(fd) }
            openByHash.removeAll()
            let fd = Glibc.open(store.path(of: pack), O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            openByHash[pack.sha256.hex] = fd
            return fd
        }
    }

    /// Copies the plan's blocks that verify into `fd`; returns the target ranges of those
    /// that did not (sorted, disjoint), which the caller adds to the remote spans.
    static func copyBlocks(_ blocks: [BlockCopy], sources: inout SourcePacks, into fd: Int32,
                           path: String) throws(FetchError) -> (copied: Int64, failed: [Range<Int64>]) {
        guard let longest = blocks.map(\.length).max(), longest > 0 else { return (0, []) }
        var buffer = [UInt8](repeating: 0, count: Int(longest))
        var failed: [Range<Int64>] = []
        var copied: Int64 = 0
        // Grouped by source pack, in offset order: one pack open at a time, read forward.
        let ordered = blocks.sorted { ($0.source.sha256.hex, $0.sourceOffset) < ($1.source.sha256.hex, $1.sourceOffset) }
        for block in ordered {
            guard let source = sources.descriptor(of: block.source) else {
                failed.append(block.target..<(block.target + block.length))
                continue
            }
            let length = Int(block.length)
            var got = 0
            while got < length {
                let n = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress! + got, length - got, off_t(block.sourceOffset) + off_t(got)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                got += n
            }
            let matches = got == length && buffer.withUnsafeBytes { block.expected.matches(UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
            guard matches else {
                failed.append(block.target..<(block.target + block.length))
                continue
            }
            try write(buffer[0..<length], to: fd, at: block.target, path: path)
            copied += block.length
        }
        return (copied, failed.sorted { $0.lowerBound < $1.lowerBound })
    }
}
