import Foundation
import Testing
@testable import ODRFSBuild

#if canImport(Glibc)
import Glibc
#endif

/// Every failure names its cause and leaves no partial dist dir behind.
@Suite struct BuildFailureTests {
    /// Builds `src` into `dist`, expecting `kind`; then checks nothing was left next to `dist`.
    static func expectFailure(_ tree: TestTree, _ kind: BuildError.Kind, containing text: String,
                              spec: String? = nil) throws {
        let before = try tree.entries()
        do {
            let report = try tree.builder("src", spec: spec).build(into: tree.path + "/dist")
            Issue.record("build succeeded: \(report.table())")
        } catch {
            #expect(error.kind == kind, "\(error)")
            #expect(error.description.contains(text), "\(error)")
        }
        #expect(try tree.entries() == before, "leftovers after a failed build")
    }

    @Test func specialFile() throws {
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        #expect(mkfifo(tree.path + "/src/pipe", 0o644) == 0)
        try Self.expectFailure(tree, .unsupportedFileType, containing: "src/pipe' is a named pipe (FIFO)")
    }

    @Test func symlinkEscapingTheRoot() throws {
        let tree = try TestTree()
        try tree.write("src/a/b.txt", "b")
        try tree.symlink("src/a/up", to: "../../outside")
        try Self.expectFailure(tree, .symlinkOutsideRoot, containing: "outside the resource directory")
    }

    @Test func absoluteSymlink() throws {
        let tree = try TestTree()
        try tree.mkdir("src")
        try tree.symlink("src/etc", to: "/etc")
        try Self.expectFailure(tree, .symlinkOutsideRoot, containing: "absolute path '/etc'")
    }

    @Test func symlinkWithinTheRootIsFine() throws {
        let tree = try TestTree()
        try tree.write("src/a/b.txt", "b")
        try tree.symlink("src/a/sibling", to: "../a/./b.txt")
        #expect(try tree.builder("src").build(into: tree.path + "/dist").totalFiles == 1)
    }

    @Test func reservedTopLevelName() throws {
        let tree = try TestTree()
        try tree.write("src/.odrfs/status", "x")
        try Self.expectFailure(tree, .reservedName, containing: "'.odrfs' is reserved")
        // Deeper down the name is an ordinary one.
        let nested = try TestTree()
        try nested.write("src/sub/.odrfs", "x")
        #expect(try nested.builder("src").build(into: nested.path + "/dist").totalFiles == 1)
    }

    @Test func unreadableFile() throws {
        let tree = try TestTree()
        try tree.write("src/secret.txt", "s")
        #expect(chmod(tree.path + "/src/secret.txt", 0) == 0)
        // Root reads through any mode bits, so only an unprivileged run can see the failure;
        // as root the build must still succeed and leave a complete dist dir.
        if geteuid() == 0 {
            #expect(try tree.builder("src").build(into: tree.path + "/dist").totalFiles == 1)
        } else {
            try Self.expectFailure(tree, .unreadable, containing: "secret.txt")
        }
    }

    @Test func missingResourceRoot() throws {
        let tree = try TestTree()
        try Self.expectFailure(tree, .resourceRootNotDirectory, containing: "does not exist or is not a directory")
    }

    @Test func badSpecStopsTheBuild() throws {
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        try tree.write("src/odr.yaml", "tags:\n  A: [\"a.txt\"]\nprefetch: [Nope]\n")
        try Self.expectFailure(tree, .spec, containing: "odr.yaml:3:")
        try Self.expectFailure(tree, .spec, containing: "cannot read the tag spec", spec: "missing.yaml")
    }

    @Test func refusesToReplaceUnrelatedDirectory() throws {
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        try tree.write("dist/precious.txt", "keep me")
        try Self.expectFailure(tree, .outputNotReplaceable, containing: "refusing to replace")
        #expect(try tree.entries("dist") == ["precious.txt"])
        try tree.write("file", "x")
        do {
            _ = try tree.builder("src").build(into: tree.path + "/file")
            Issue.record("replaced a file")
        } catch {
            #expect(error.kind == .outputNotReplaceable)
        }
    }

    @Test func replacesEmptyDirectoryAndPreviousDist() throws {
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        try tree.mkdir("dist")
        _ = try tree.builder("src").build(into: tree.path + "/dist")
        try tree.write("src/b.txt", "b")
        let report = try tree.builder("src").build(into: tree.path + "/dist/")
        #expect(report.totalFiles == 2)
        #expect(try tree.entries() == ["dist", "src"])   // no parked or staging directories left
    }

    @Test func failedRebuildLeavesPreviousDistUntouched() throws {
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        _ = try tree.builder("src").build(into: tree.path + "/dist")
        let before = try tree.snapshot("dist")
        #expect(mkfifo(tree.path + "/src/pipe", 0o644) == 0)
        try Self.expectFailure(tree, .unsupportedFileType, containing: "pipe")
        #expect(try tree.snapshot("dist") == before)
    }

    @Test func outputInsideTheResourceRoot() throws {
        let tree = try TestTree()
        try tree.write("src/a.txt", "a")
        do {
            _ = try tree.builder("src").build(into: tree.path + "/src/dist")
            Issue.record("built into the resource directory")
        } catch {
            #expect(error.kind == .outputInsideResourceRoot)
        }
        #expect(try tree.entries("src") == ["a.txt"])
    }
}
