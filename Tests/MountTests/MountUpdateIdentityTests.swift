import Foundation
import ODRFSCore
import Testing

/// Issue 26, item 8: across an update, a file keeps its inode number (and with it the
/// kernel's page cache, `keep_cache`) only when its new bytes have been verified to be
/// its old bytes, never on the new index's word. Revision 2 here changes a file in place
/// (same size, mode and mtime) and its index is then rewritten so that the file carries
/// revision 1's SHA-256 (and chunk digests): the pack assembled from that claim fails
/// verification and is downloaded whole, and the file must still become a new file.
@Suite("Update identity rests on verified bytes", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(3)))
struct MountUpdateIdentityTests {
    /// The file changed in place, and whether its chunk digests are forged too (big.bin has
    /// chunks in the index; map.dat is too small for them).
    static let cases: [(path: String, blocks: Bool)] = [("levels/3/map.dat", false), ("big.bin", true)]

    @Test("a changed file whose new index claims its old SHA-256 (and chunk digests) gets a new inode: new opens read revision 2, an old handle revision 1 only",
          arguments: cases.indices)
    func forgedDigestDecidesNothing(caseNumber: Int) async throws {
        let (path, blocks) = Self.cases[caseNumber]
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        // Passthrough off: every read of big.bin takes the FUSE path and its page cache.
        try await fixture.mount(extra: ["--passthrough", "off"])
        let mnt = fixture.mountpoint
        let old = try #require(TestBundle.files[path])
        let oldIndex = try FileIndex(contentsOf: fixture.dist + "/" + fixture.manifest.index.file)
        // The open makes the file's pack local (an update fetches only local packs), and the
        // read puts revision 1's first pages in the kernel's page cache.
        let handle = try #require(FileHandle(forReadingAtPath: mnt + "/" + path))
        defer { try? handle.close() }
        // Past the first change below: on the old inode, those pages stay cached.
        let prefix = old.count / 3 + 4096
        #expect(try handle.read(upToCount: prefix) == Data(old.prefix(prefix)))
        let inodeBefore = try #require(MountUpdateTests.inode(mnt + "/" + path))

        // Revision 2: the file changed in two places, same size, mode and mtime.
        var new = old
        for start in [old.count / 3, old.count - 1000] {
            for i in start..<min(start + 700, old.count) { new[i] ^= 0x3C }
        }
        try Self.rewrite(fixture.source + "/" + path, with: new)
        let build = try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist])
        try #require(build.status == 0, "\(build.stderr)")
        try Self.forgeIndex(fixture, path: path, old: old, new: new, blocks: blocks)
        // The premise: revision 2's index says the file is revision 1's, in every attribute.
        let forged = try FileIndex(contentsOf: fixture.dist + "/" + fixture.manifest.index.file)
        let (o, n) = (try #require(oldIndex.lookup(path: path)), try #require(forged.lookup(path: path)))
        #expect(forged.sha256(of: n) == oldIndex.sha256(of: o))
        #expect(forged.entry(n)?.modificationTime == oldIndex.entry(o)?.modificationTime)
        #expect(forged.entry(n)?.size == oldIndex.entry(o)?.size)
        if blocks { #expect(forged.chunks(of: n) != nil && forged.chunks(of: n) == oldIndex.chunks(of: o)) }

        let update = try await fixture.odrfs(["update", mnt, "--json"])
        try #require(update.status == 0, "\(update.stderr)\n\(fixture.log)")
        // The claim was tried and failed: the chunks built from it were fetched again (or the
        // pack was downloaded whole), so it holds revision 2.
        #expect(fixture.log.contains("built from local bytes do not verify") || fixture.log.contains("downloading it whole"),
                "the forged digest was never used: \(fixture.log)")
        // And the switch read both revisions' bytes and found them different.
        #expect(fixture.log.contains("same SHA-256 in both file indexes have different bytes"), "\(fixture.log)")

        #expect(MountUpdateTests.inode(mnt + "/" + path) != inodeBefore, "a changed file kept its inode on an unverified digest")
        // A new open reads revision 2 (not revision 1's pages still cached for the old inode).
        // (Compared as Bools: a failing Data comparison would print megabytes.)
        let newOpen = try Data(contentsOf: URL(fileURLWithPath: mnt + "/" + path)) == Data(new)
        #expect(newOpen, "a new open read bytes of revision 1")
        // Memory pressure drops the page cache; a new open fills it again with revision 2...
        Self.dropPageCache(handle.fileDescriptor)
        Self.dropPageCache(path: mnt + "/" + path)
        let refilled = try Data(contentsOf: URL(fileURLWithPath: mnt + "/" + path)) == Data(new)
        #expect(refilled, "a new open after the page cache was dropped read bytes of revision 1")
        // ... and the handle opened before the update still reads revision 1 only.
        let rest = try handle.readToEnd() ?? Data()
        let oldOnly = rest == Data(old.dropFirst(prefix))
        #expect(oldOnly, "the handle opened before the update read revision 2's bytes")
    }

    /// Writes `bytes` over the file, keeping its mtime (a rebuild then sees the same attributes).
    static func rewrite(_ file: String, with bytes: [UInt8]) throws {
        var info = stat()
        try #require(stat(file, &info) == 0)
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        var times = [info.st_atim, info.st_mtim]
        try #require(utimensat(AT_FDCWD, file, &times, 0) == 0)
    }

    /// Rewrites the dist dir's index so that `path` carries the SHA-256 (and, with `blocks`,
    /// the block hashes) of `old` in place of those of `new`, then re-hashes the index and
    /// patches the manifest: consistent with itself, only the packs' bytes can tell.
    static func forgeIndex(_ fixture: MountFixture, path: String, old: [UInt8], new: [UInt8], blocks: Bool) throws {
        var manifest = try fixture.manifest
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: fixture.dist + "/" + manifest.index.file)))
        try replace(ContentHash.of(new).digestBytes, with: ContentHash.of(old).digestBytes, in: &bytes)
        if blocks {
            let index = try FileIndex(bytes: bytes)
            let entry = try #require(index.lookup(path: path))
            let chunks = try #require(index.chunks(of: entry))
            for chunk in chunks {
                let range = Int(chunk.offset)..<Int(chunk.offset + chunk.length)
                let width = chunk.digest.storedBytes.count
                let (was, now) = (chunkHash(old[range], width), chunkHash(new[range], width))
                if was != now { try replace(now, with: was, in: &bytes) }
            }
        }
        let hash = ContentHash.of(bytes)
        manifest.index.file = "index/\(hash.hex).\(FileIndex.fileExtension)"
        manifest.index.sha256 = hash
        manifest.bundleVersion = Manifest.computeBundleVersion(index: hash, packs: manifest.packs)
        try Data(bytes).write(to: URL(fileURLWithPath: fixture.dist + "/" + manifest.index.file))
        try manifest.encoded().write(to: URL(fileURLWithPath: fixture.dist + "/" + Manifest.fileName))
    }

    /// A chunk digest's bytes in the index: the chunk's SHA-256 (version 4), or its first
    /// 16 bytes (a version-3 block hash).
    static func chunkHash(_ chunk: ArraySlice<UInt8>, _ width: Int) -> [UInt8] {
        Array(ContentHash.of(chunk).digestBytes.prefix(width))
    }

    /// Replaces the one occurrence of `pattern` in `bytes`.
    static func replace(_ pattern: [UInt8], with replacement: [UInt8], in bytes: inout [UInt8]) throws {
        let hits = (0...(bytes.count - pattern.count)).filter { bytes[$0..<($0 + pattern.count)].elementsEqual(pattern) }
        try #require(hits.count == 1, "\(hits.count) occurrences of a hash in the index")
        bytes.replaceSubrange(hits[0]..<(hits[0] + pattern.count), with: replacement)
    }

    /// Drops the kernel's cached pages of the open file, as memory pressure does.
    static func dropPageCache(_ fd: Int32) {
        #expect(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0)
    }

    static func dropPageCache(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            Issue.record("cannot open \(path): \(errno)")
            return
        }
        dropPageCache(fd)
        close(fd)
    }
}
