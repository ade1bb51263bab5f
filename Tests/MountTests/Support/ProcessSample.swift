import Foundation

/// What a process holds at one moment, from /proc: threads, open descriptors and
/// resident memory. Used to check that a daemon under load does not grow.
struct ProcessSample: CustomStringConvertible {
    var threads: Int
    var descriptors: Int
    var residentKiB: Int

    /// Samples `pid`; nil if it is gone.
    init?(_ pid: pid_t) {
        let manager = FileManager.default
        guard let tasks = try? manager.contentsOfDirectory(atPath: "/proc/\(pid)/task"),
              let descriptors = try? manager.contentsOfDirectory(atPath: "/proc/\(pid)/fd"),
              let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        threads = tasks.count
        self.descriptors = descriptors.count
        residentKiB = kib
    }

    var description: String { "threads \(threads), fds \(descriptors), RSS \(residentKiB / 1024) MiB (\(residentKiB) KiB)" }
}
