@testable import FUSEKit
import Foundation
import Logging
import Testing

/// Checks that need no mount: value types, option strings, error messages.
struct SetupTests {
    @Test func fuseDeviceIsPresentOnCI() {
        // Mount suites skip without /dev/fuse; on CI that must be a failure, not a silent skip.
        if MountEnvironment.isCI {
            #expect(MountEnvironment.hasFuseDevice, "CI=true but /dev/fuse is missing: mount tests cannot run")
        }
    }

    @Test func errnoNamesTheCConstant() {
        #expect(Errno.readOnlyFileSystem.rawValue == EROFS)
        #expect(Errno.notSupported.rawValue == EOPNOTSUPP)
        #expect(Errno.noSuchFileOrDirectory.description == "ENOENT (No such file or directory)")
        #expect(Errno(rawValue: 4242).description.hasPrefix("errno 4242"))
    }

    @Test func openFlagsDetectWrites() {
        #expect(!OpenFlags(rawValue: O_RDONLY).isWriteRequested)
        #expect(!OpenFlags(rawValue: O_RDONLY | O_NOFOLLOW | O_CLOEXEC).isWriteRequested)
        #expect(OpenFlags(rawValue: O_WRONLY).isWriteRequested)
        #expect(OpenFlags(rawValue: O_RDWR).isWriteRequested)
        #expect(OpenFlags(rawValue: O_RDONLY | O_TRUNC).isWriteRequested)
        #expect(OpenFlags(rawValue: O_RDONLY | O_APPEND).isWriteRequested)
    }

    @Test func mountOptionsBecomeOneEscapedOptionList() {
        let options = MountOptions(fsName: "a,b\\c", subtype: "odrfs", allowOther: true, extra: ["max_read=131072"])
        #expect(options.arguments == ["odrfs", "-o", "fsname=a\\,b\\\\c,subtype=odrfs,ro,allow_other,default_permissions,max_read=131072"])
    }

    /// Reads must fit the splice pipe libfuse can grow (reply + 3 pages, rounded up
    /// to a power of two pages, at most pipe-max-size), or every large reply is copied.
    @Test func defaultMaxReadKeepsRepliesOnTheSplicePath() {
        #expect(MountOptions.spliceSafeMaxRead(pipeMaxSize: 1 << 20) == (1 << 20) - 16384)
        #expect(MountOptions.spliceSafeMaxRead(pipeMaxSize: 2 << 20) == 1 << 20)
        #expect(MountOptions.spliceSafeMaxRead(pipeMaxSize: 1_500_000) == (1 << 20) - 16384)
        #expect(MountOptions.spliceSafeMaxRead(pipeMaxSize: 4096) == 4096)
        for pipeMax in [65536, 1 << 20, 3 << 20] {
            let maxRead = MountOptions.spliceSafeMaxRead(pipeMaxSize: pipeMax)
            var pipe = 4096
            while pipe < maxRead + 3 * 4096 + 16 { pipe *= 2 }
            #expect(pipe <= pipeMax, "a \(maxRead)-byte reply needs a \(pipe)-byte pipe")
        }
        let options = MountOptions(fsName: "odrfs", subtype: "odrfs")
        #expect(options.arguments[2].hasSuffix(",max_read=\(MountOptions.spliceSafeMaxRead())"))
    }

    @Test func attributesConvertToStat() {
        let attributes = FileAttributes(
            inode: InodeNumber(42), mode: UInt32(S_IFREG) | 0o444, size: 1000,
            modificationTime: Timespec(seconds: 10, nanoseconds: 20)
        )
        let stat = attributes.stat
        #expect(stat.st_ino == 42)
        #expect(stat.st_mode == S_IFREG | 0o444)
        #expect(stat.st_size == 1000)
        #expect(stat.st_blocks == 2)
        #expect(stat.st_mtim.tv_sec == 10 && stat.st_mtim.tv_nsec == 20)
        #expect(stat.st_atim.tv_sec == 10 && stat.st_ctim.tv_nsec == 20)
        #expect(!attributes.isDirectory)
    }

    @Test func connectionConfigurationOnlyWantsWhatIsOffered() {
        // Kernel ABI bit numbers (fuse_common.h): stable by definition.
        let spliceWrite: UInt32 = 1 << 7, spliceMove: UInt32 = 1 << 8
        let readdirPlus: UInt32 = 1 << 13, readdirPlusAuto: UInt32 = 1 << 14
        let want = ConnectionConfiguration().negotiate(
            capable: spliceWrite | readdirPlus | readdirPlusAuto,
            want: readdirPlusAuto
        )
        #expect(want & spliceWrite != 0)
        #expect(want & spliceMove == 0, "not offered")
        #expect(want & readdirPlus != 0)
        #expect(want & readdirPlusAuto == 0, "cleared: always readdirplus")
    }

    @Test func mountRejectsAMissingMountpointClearly() throws {
        let session = try FUSESession(
            fileSystem: TestFileSystem(descriptor: -1, descriptorSize: 0),
            options: MountOptions(fsName: "t", subtype: "t"),
            logger: Logger(label: "test")
        )
        #expect {
            try session.mount(at: "/nonexistent/fusekit-mountpoint")
        } throws: { error in
            let text = "\(error)"
            return text.contains("/nonexistent/fusekit-mountpoint") && (text.contains("does not exist") || text.contains("/dev/fuse"))
        }
        #expect {
            try session.mount(at: "/etc/hostname")
        } throws: { error in
            "\(error)".contains("not a directory") || "\(error)".contains("/dev/fuse")
        }
        #expect {
            try session.mount(at: "/proc")
        } throws: { error in
            "\(error)".contains("already mounted") || "\(error)".contains("/dev/fuse")
        }
        session.unmountAndDestroy()
        session.unmountAndDestroy()
        #expect(session.isTornDown)
    }

    @Test func unknownOptionsFailSessionCreationWithLibfusesReason() {
        #expect {
            _ = try FUSESession(
                fileSystem: TestFileSystem(descriptor: -1, descriptorSize: 0),
                options: MountOptions(fsName: "t", subtype: "t", extra: ["no_such_option_xyz"]),
                logger: Logger(label: "test")
            )
        } throws: { error in
            "\(error)".contains("unknown option") && "\(error)".contains("no_such_option_xyz")
        }
    }

    @Test func replyGateRefusesAfterClose() {
        let gate = ReplyGate()
        #expect(gate.enter())
        gate.leave()
        #expect(gate.close(timeout: 1))
        #expect(!gate.enter())
        #expect(gate.isClosed)
    }
}
