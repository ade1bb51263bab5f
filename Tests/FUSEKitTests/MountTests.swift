import FUSEKit
import Foundation
import Testing
import TestSupport

/// Real mounts of `TestFileSystem`, checked with ordinary tools.
/// Serialized: each test mounts its own temp dir, but one at a time keeps
/// timing assertions meaningful on two cores.
@Suite(.serialized, .timingSensitive, .enabled(if: MountEnvironment.hasFuseDevice, "/dev/fuse is missing: mount tests skipped"), .timeLimit(.minutes(1)))
struct MountTests {
    @Test func statShowsSizesModesAndTypes() async throws {
        try await withTestMount { mount in
            let hello = await runTool("/usr/bin/stat", ["-c", "%s %a %F %h %Y", mount.path("hello.txt")])
            #expect(hello.stdout == "13 444 regular file 1 1700000000\n", "\(hello.stderr)")
            let dir = await runTool("/usr/bin/stat", ["-c", "%a %F", mount.path("dir")])
            #expect(dir.stdout == "555 directory\n", "\(dir.stderr)")
            let link = await runTool("/usr/bin/stat", ["-c", "%F %s", mount.path("link")])
            #expect(link.stdout == "symbolic link 9\n", "\(link.stderr)")
            let missing = await runTool("/usr/bin/stat", [mount.path("missing")])
            #expect(missing.status != 0)
            #expect(missing.stderr.contains("No such file or directory"))
        }
    }

    @Test(arguments: [true, false])
    func listingsIncludeEveryEntry(readdirPlus: Bool) async throws {
        try await withTestMount(readdirPlus: readdirPlus) { mount in
            let root = await runTool("/usr/bin/ls", ["-1a", mount.directory])
            let expected = [".", "..", "big.bin", "dir", "drop.txt", "hang.txt", "hello.txt", "link", "lost.txt", "many", "slow.txt"]
            #expect(root.stdout.split(separator: "\n").map(String.init) == expected, "\(root.stderr)")
            // `ls -l` asks for security.* / system.posix_acl_* xattrs: they must fail quietly.
            let long = await runTool("/usr/bin/ls", ["-l", mount.path("dir")])
            #expect(long.succeeded, "\(long.stderr)")
            #expect(long.stdout.contains("-r--r--r-- 1 root root 7 "))
            #expect(long.stdout.contains("nested.txt"))
            // 300 long names need several readdir(plus) replies: paging must lose and repeat nothing.
            let many = await runTool("/usr/bin/ls", ["-1", mount.path("many")])
            let names = many.stdout.split(separator: "\n")
            #expect(names.count == TestFileSystem.manyCount)
            #expect(Set(names).count == TestFileSystem.manyCount)
            let flags = mount.fileSystem.events.withLock { $0.readdirPlusFlags }
            #expect(flags.count > 3, "several pages")
            #expect(flags.allSatisfy { $0 == readdirPlus }, "\(flags)")
        }
    }

    /// A readdirplus entry with node id 0 (`addNameOnly`) is listed with its name, type
    /// and inode number, but the kernel builds no inode or dentry for it: the first stat
    /// of that file asks with a lookup, where a linked entry needs none (issue 28).
    @Test(arguments: [false, true])
    func nameOnlyEntriesAreListedButNotLinked(nameOnly: Bool) async throws {
        try await withTestMount { mount in
            mount.fileSystem.events.withLock { $0.nameOnlyFiles = nameOnly }
            let name = "entry-with-a-longish-name-0007.txt"
            let listing = await runTool("/usr/bin/find", [mount.path("many"), "-type", "f"])
            let names = listing.stdout.split(separator: "\n")
            #expect(names.count == TestFileSystem.manyCount, "\(listing.stderr)")
            #expect(names.contains { $0.hasSuffix("/" + name) })
            let events = mount.fileSystem.events.withLock { $0 }
            #expect(!events.readdirPlusFlags.isEmpty && events.readdirPlusFlags.allSatisfy { $0 }, "\(events.readdirPlusFlags)")
            #expect(!events.lookups.contains(name), "find -type f needs no stat")
            let stat = await runTool("/usr/bin/stat", ["-c", "%s %F", mount.path("many/" + name)])
            #expect(stat.stdout == "0 regular empty file\n", "\(stat.stderr)")
            let lookups = mount.fileSystem.events.withLock { $0.lookups.filter { $0 == name }.count }
            #expect(lookups == (nameOnly ? 1 : 0), "lookups of \(name) after the listing")
        }
    }

    /// Without no-opendir every listing costs an opendir and a releasedir and
    /// is read again; with it neither is ever called and the second listing
    /// comes from the kernel's readdir cache.
    @Test(arguments: [false, true])
    func noOpendirSkipsDirectoryOpensAndCachesListings(skipDirectoryOpens: Bool) async throws {
        try await withTestMount(skipDirectoryOpens: skipDirectoryOpens) { mount in
            let first = await runTool("/usr/bin/ls", ["-1", mount.path("many")])
            #expect(first.stdout.split(separator: "\n").count == TestFileSystem.manyCount, "\(first.stderr)")
            let afterFirst = mount.fileSystem.events.withLock { $0.readdirPlusFlags.count }
            #expect(afterFirst > 0)
            let second = await runTool("/usr/bin/ls", ["-1", mount.path("many")])
            #expect(second.stdout == first.stdout)
            let events = mount.fileSystem.events.withLock { $0 }
            if skipDirectoryOpens {
                #expect(events.openDirectoryCalls == 0)
                #expect(events.readdirPlusFlags.count == afterFirst, "the second listing came from the kernel's cache")
            } else {
                #expect(events.openDirectoryCalls >= 2)
                #expect(events.readdirPlusFlags.count > afterFirst, "no cache_readdir: listed again")
            }
            _ = await waitUntil(timeout: 2) { mount.fileSystem.events.withLock { $0.releaseDirectoryCalls } == events.openDirectoryCalls }
            #expect(mount.fileSystem.events.withLock { $0.releaseDirectoryCalls } == events.openDirectoryCalls)
        }
    }

    /// flush, fsync and fsyncdir answer ENOSYS, which the kernel reports to
    /// the caller as success (and then stops sending): close, fsync and
    /// fdatasync of files and directories all succeed, every time.
    @Test func syncAndCloseSucceedWithoutARoundTrip() async throws {
        try await withTestMount { mount in
            for _ in 0..<2 {
                let file = await runTool("/usr/bin/sync", [mount.path("hello.txt")])
                #expect(file.succeeded, "\(file.stderr)")
                let data = await runTool("/usr/bin/sync", ["--data", mount.path("dir/nested.txt")])
                #expect(data.succeeded, "\(data.stderr)")
                let directory = await runTool("/usr/bin/sync", [mount.path("dir")])
                #expect(directory.succeeded, "\(directory.stderr)")
                #expect(await runTool("/usr/bin/cat", [mount.path("hello.txt")]).stdout == "Hello, FUSE!\n")
            }
        }
    }

    @Test func readsContentsThroughFilesAndSymlinks() async throws {
        try await withTestMount { mount in
            #expect(await runTool("/usr/bin/cat", [mount.path("hello.txt")]).stdout == "Hello, FUSE!\n")
            #expect(await runTool("/usr/bin/cat", [mount.path("link")]).stdout == "Hello, FUSE!\n")
            #expect(await runTool("/usr/bin/cat", [mount.path("dir/nested.txt")]).stdout == "nested\n")
            #expect(await runTool("/usr/bin/readlink", [mount.path("link")]).stdout == "hello.txt\n")
        }
    }

    @Test func fileDescriptorBackedReadsMatchTheSource() async throws {
        try await withTestMount { mount in
            let reference = mount.directory + ".reference"
            _ = FileManager.default.createFile(atPath: reference, contents: Data(TestMount.bigContents))
            defer { unlink(reference) }
            let compare = await runTool("/usr/bin/cmp", [reference, mount.path("big.bin")], timeout: 20)
            #expect(compare.succeeded, "\(compare.stdout)\(compare.stderr)")
            // A read at an odd offset near the end exercises short replies.
            let tail = await runTool("/usr/bin/tail", ["-c", "5", mount.path("big.bin")])
            #expect(Array(tail.stdoutData) == Array(TestMount.bigContents.suffix(5)))
        }
    }

    @Test func extendedAttributes() async throws {
        try await withTestMount { mount in
            let value = await runTool("/usr/bin/getfattr", ["-n", "user.test", "--only-values", mount.path("hello.txt")])
            #expect(value.stdout == "value", "\(value.stderr)")
            let dump = await runTool("/usr/bin/getfattr", ["-d", mount.path("hello.txt")])
            #expect(dump.stdout.contains("user.test=\"value\""), "\(dump.stderr)")
            let missing = await runTool("/usr/bin/getfattr", ["-n", "user.missing", mount.path("hello.txt")])
            #expect(missing.status != 0)
            #expect(missing.stderr.contains("No such attribute"))
            let security = await runTool("/usr/bin/getfattr", ["-n", "security.selinux", mount.path("hello.txt")])
            #expect(security.status != 0)
            #expect(security.stderr.contains("not supported"))
        }
    }

    @Test func writesFailWithReadOnlyFileSystem() async throws {
        try await withTestMount { mount in
            let touch = await runTool("/usr/bin/touch", [mount.path("new.txt")])
            #expect(touch.status != 0)
            #expect(touch.stderr.contains("Read-only file system"), "\(touch.stderr)")
            let overwrite = await runTool("/bin/sh", ["-c", "echo x > '\(mount.path("hello.txt"))'"])
            #expect(overwrite.stderr.contains("Read-only file system"), "\(overwrite.stderr)")
        }
    }

    @Test func mutationsReachRejectMutationWhenMountedWritable() async throws {
        try await withTestMount(readOnly: false) { mount in
            let touch = await runTool("/usr/bin/touch", [mount.path("new.txt")])
            #expect(touch.stderr.contains("Read-only file system"), "\(touch.stderr)")
            let mkdir = await runTool("/usr/bin/mkdir", [mount.path("newdir")])
            #expect(mkdir.stderr.contains("Read-only file system"), "\(mkdir.stderr)")
            let rejected = mount.fileSystem.events.withLock { $0.rejectedOperations }
            #expect(rejected.contains("create"))
            #expect(rejected.contains("mkdir"))
        }
    }

    @Test func statfsReportsTheFileSystemStatistics() async throws {
        try await withTestMount { mount in
            let result = await runTool("/usr/bin/stat", ["-f", "-c", "%S %b %f %a %c %d %l %T", mount.directory])
            #expect(result.stdout == "4096 1000 10 5 50 0 255 fuseblk\n" || result.stdout.hasPrefix("4096 1000 10 5 50 0 255 "), "\(result.stdout)\(result.stderr)")
            let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
            let line = mounts.split(separator: "\n").first { $0.contains(" \(mount.directory) ") }
            #expect(line?.contains("fuse.fusekittest ro,") == true, "\(line ?? "not mounted")")
            #expect(line?.hasPrefix("fusekit-test,with") == true, "\(line ?? "not mounted")")
        }
    }
}
