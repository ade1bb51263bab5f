import FaultOriginSupport
import Foundation
import ODRFSCore
import Testing
import TestSupport

/// Set-up shared by the machine-wide store's mount tests.
extension MountFixture {
    /// The standard test bundle built, and a store path and a second mountpoint under the
    /// fixture's root.
    func storeWorld() async throws -> (store: String, second: String) {
        try await buildTestBundle()
        let second = root + "/mnt2"
        try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
        return (root + "/store", second)
    }

    /// The identity `buildSecondBundle` gives its bundle (the first is named after its source
    /// directory, "source").
    static let secondBundleIdentity = "com.example.second"

    /// A second bundle: the source tree copied with its times (so the packs of unchanged files
    /// are byte for byte the same, the Big pack among them) and `levels/2/map.dat` changed.
    /// Returns its dist dir.
    func buildSecondBundle() async throws -> String {
        let source = root + "/source2", dist = root + "/dist2"
        #expect(try await Command.run("/bin/cp", ["-a", self.source, source]).status == 0)
        try Data(TestBundle.pseudoRandom(70_000, seed: 99)).write(to: URL(fileURLWithPath: source + "/levels/2/map.dat"))
        #expect(try await odrfs(["build", source, "-o", dist, "--bundle-id", Self.secondBundleIdentity]).status == 0)
        let other = try Manifest.decode(Data(contentsOf: URL(fileURLWithPath: dist + "/manifest.json")))
        #expect(other.packs.first { $0.id.rawValue == "Big" }?.sha256 == (try manifest.packs.first { $0.id.rawValue == "Big" }?.sha256),
                "the two bundles do not share their Big pack")
        return dist
    }

    /// Kills the daemon of `mountpoint` with SIGKILL and waits (at most 10 s, the task
    /// sleeping, never the thread) until it is gone or a zombie.
    func killDaemon(_ mountpoint: String? = nil) async throws {
        let pid = try #require(daemonPID(mountpoint))
        #expect(kill(pid, SIGKILL) == 0)
        #expect(await eventually { kill(pid, 0) != 0 || Self.isZombie(pid) }, "the killed daemon \(pid) lives on")
    }

    /// Whether process `pid` has exited and waits to be reaped (state `Z` in /proc).
    static func isZombie(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }
}

/// Runs `body` with a fault origin serving the files of `dist`; always stops it.
func withFaultOrigin(serving dist: String, _ body: (FaultOrigin) async throws -> Void) async throws {
    let origin = try await FaultOrigin.start()
    do {
        try origin.setFiles(from: dist)
        try await body(origin)
    } catch {
        await origin.stop()
        throw error
    }
    await origin.stop()
}

/// The contents of `path`, read on a thread of its own: a read through a mount may wait for
/// a download, and a test must not hold one of the cooperative pool's threads meanwhile (on
/// two cores that starves every other test's timers).
func readThroughMount(_ path: String) async -> Data? {
    await onDedicatedThread { FileManager.default.contents(atPath: path) }
}

/// A file of a mount held open by a test, every blocking call on a thread of its own.
final class HeldFile: Sendable {
    let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Opens `path` read-only (an open of a remote file waits for its first bytes).
    static func open(_ path: String) async throws -> HeldFile {
        let fd = await onDedicatedThread { Glibc.open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return HeldFile(descriptor: fd)
    }

    /// Up to `count` bytes from the current offset.
    func read(upTo count: Int) async -> Data {
        let fd = descriptor
        return await onDedicatedThread {
            var buffer = [UInt8](repeating: 0, count: count)
            let read = Glibc.read(fd, &buffer, count)
            return Data(buffer.prefix(max(read, 0)))
        }
    }

    /// Up to `count` bytes at `offset` (pread: the file offset does not move).
    func read(at offset: Int64, count: Int) async -> Data {
        let fd = descriptor
        return await onDedicatedThread {
            var buffer = [UInt8](repeating: 0, count: count)
            let read = pread(fd, &buffer, count, off_t(offset))
            return Data(buffer.prefix(max(read, 0)))
        }
    }

    /// Everything from the current offset to the end.
    func readToEnd() async -> Data {
        let fd = descriptor
        return await onDedicatedThread {
            var data = Data()
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            while true {
                let read = Glibc.read(fd, &buffer, buffer.count)
                if read <= 0 { return data }
                data.append(contentsOf: buffer.prefix(read))
            }
        }
    }

    func rewind() {
        _ = lseek(descriptor, 0, SEEK_SET)
    }

    func close() {
        _ = Glibc.close(descriptor)
    }
}
