import Foundation
import ODRFSCore
import Testing
@testable import ODRFSBuild

#if canImport(Glibc)
import Glibc
#endif

/// Resource trees that change under the builder or try to leave the root (issue 12, defect 8),
/// and a build that must always leave a complete dist dir (defect 10).
@Suite(.timeLimit(.minutes(1)))
struct HostileTreeTests {
    @Test func symlinkChainEscapingTheRootIsRefused() throws {
        let tree = try TestTree()
        try tree.write("src/d/a.txt", "a")
        try tree.symlink("src/d/s", to: "..")
        try tree.symlink("src/x", to: "d/s/d/s/d/s/../../../etc/passwd")
        try BuildFailureTests.expectFailure(tree, .symlinkOutsideRoot, containing: "src/x")
    }

    @Test func symlinkThroughAnotherLinkIntoTheVirtualDirectoryIsRefused() throws {
        // ".odrfs" exists only in the mount: "l/.." there is the root, and one more ".." leaves.
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        try tree.symlink("src/l", to: ".odrfs")
        try tree.symlink("src/x", to: "l/../../etc/passwd")
        try BuildFailureTests.expectFailure(tree, .symlinkOutsideRoot, containing: "outside the resource directory")
    }

    @Test func symlinkResolvedThroughALinkStaysInside() throws {
        // Counting ".." in the text alone refused this: "s/.." is "deep", not the root.
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        try tree.write("src/deep/e/f.txt", "f")
        try tree.symlink("src/s", to: "deep/e")
        try tree.symlink("src/x", to: "s/../../a.txt")
        try tree.symlink("src/loop1", to: "loop2")
        try tree.symlink("src/loop2", to: "loop1")
        #expect(try tree.builder("src").build(into: tree.path + "/dist").totalFiles == 2)
    }

    @Test func directorySwappedForASymlinkAfterTheScanIsNotFollowed() throws {
        let tree = try TestTree()
        try tree.write("src/d/f.txt", "inside")
        try tree.write("outside/f.txt", "secret")
        let root = open(tree.path + "/src", O_RDONLY | O_DIRECTORY)
        defer { close(root) }
        #expect(try readAll(POSIXFile.openRegularFile(beneath: root, ["d", "f.txt"])) == "inside")
        try FileManager.default.removeItem(atPath: tree.path + "/src/d")
        try tree.symlink("src/d", to: "../outside")
        #expect(throws: POSIXFile.BeneathError.self) { try POSIXFile.openRegularFile(beneath: root, ["d", "f.txt"]) }
        try FileManager.default.removeItem(atPath: tree.path + "/src/d")
        try tree.mkdir("src/d")
        try tree.symlink("src/d/f.txt", to: "../../outside/f.txt")
        #expect(throws: POSIXFile.BeneathError.self) { try POSIXFile.openRegularFile(beneath: root, ["d", "f.txt"]) }
    }

    @Test func fileSwappedForAFIFOOrDeviceAfterTheScanDoesNotBlock() throws {
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        let scanned = try ResourceScanner(root: tree.path + "/src", skippedPath: nil).scan()
        try FileManager.default.removeItem(atPath: tree.path + "/src/a.txt")
        #expect(mkfifo(tree.path + "/src/a.txt", 0o644) == 0)
        let writer = PackFileWriter(resourceRoot: tree.path + "/src", chunkSize: .kibibytes(4))
        let error = #expect(throws: BuildError.self) {
            _ = try writer.write(files: scanned.files, number: .base, to: tree.path + "/pack.tar")
        }
        #expect(error?.kind == .unsupportedFileType, "\(String(describing: error))")
        if geteuid() == 0 {
            try FileManager.default.removeItem(atPath: tree.path + "/src/a.txt")
            #expect(mknod(tree.path + "/src/a.txt", S_IFCHR | 0o644, dev_t(0x105)) == 0)   // /dev/zero: major 1, minor 5
            #expect(throws: BuildError.self) {
                _ = try writer.write(files: scanned.files, number: .base, to: tree.path + "/pack2.tar")
            }
        }
    }

    @Test func staleTemporaryDirectoriesOfAKilledBuildAreRemoved() throws {
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        _ = try tree.builder("src").build(into: tree.path + "/dist")
        // What a build killed before its swap, or after it, leaves beside the output.
        try tree.write(".dist.odrfs-building-AbC123/packs/partial.tar", "x")
        try tree.write(".dist.odrfs-old-XyZ789/manifest.json", "{}")
        // A live build's directory is locked and must be kept.
        try tree.mkdir(".dist.odrfs-building-Live00")
        let live = open(tree.path + "/.dist.odrfs-building-Live00", O_RDONLY | O_DIRECTORY)
        defer { close(live) }
        #expect(flock(live, LOCK_EX | LOCK_NB) == 0)
        try tree.write("src/b.txt", "b")
        #expect(try tree.builder("src").build(into: tree.path + "/dist").totalFiles == 2)
        #expect(try tree.entries() == [".dist.odrfs-building-Live00", "dist", "src"])
    }

    @Test func rebuildUpdatesTheDistDirInPlace() throws {
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        _ = try tree.builder("src").build(into: tree.path + "/dist")
        let firstInode = try inode(tree.path + "/dist")
        try tree.write("src/b.txt", "b")
        _ = try tree.builder("src").build(into: tree.path + "/dist")
        // Objects accumulate in the same directory (a CDN or `odrfs serve` keeps serving it);
        // only manifest.json is replaced.
        #expect(try inode(tree.path + "/dist") == firstInode)
        let (manifest, index) = try BundleBuilderTests.load(tree.path + "/dist")
        try index.validate(against: manifest)
        for pack in manifest.packs {
            #expect(FileManager.default.fileExists(atPath: tree.path + "/dist/" + pack.file))
        }
        #expect(try tree.entries() == ["dist", "src"])
    }

    private func readAll(_ fd: Int32) -> String {
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 100)
        let n = read(fd, &buffer, buffer.count)
        return String(decoding: buffer.prefix(max(n, 0)), as: UTF8.self)
    }

    private func inode(_ path: String) throws -> UInt64 {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CocoaError(.fileNoSuchFile) }
        return UInt64(info.st_ino)
    }
}
