import Foundation

/// What a process holds at one moment, from /proc: threads, open descriptors and
/// resident memory. Used to check that a daemon under load does not grow.
struct ProcessSample: CustomStringConvertible {
    var threads: Int
    var descriptors: Int
    /// Descriptors of files under one of `filesUnder` (e.g. the cache's pack files, one per
    /// open reader or download): they come and go with the load, unlike the rest.
    var fileDescriptors: Int
    var residentKiB: Int
    /// Descriptors other than `fileDescriptors`: sockets, pipes, the FUSE device, the index.
    var otherDescriptors: Int { descriptors - fileDescriptors }

    /// Samples `pid`; nil if it is gone.
    init?(_ pid: pid_t, filesUnder prefixes: [String]) {
        let manager = FileManager.default
        guard let tasks = try? manager.contentsOfDirectory(atPath: "/proc/\(pid)/task"),
              let descriptors = try? manager.contentsOfDirectory(atPath: "/proc/\(pid)/fd"),
              let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        threads = tasks.count
        self.descriptors = descriptors.count
        fileDescriptors = descriptors.filter { name in
            guard let target = try? manager.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(name)") else { return false }
            return prefixes.contains { target.hasPrefix($0) }
        }.count
        residentKiB = kib
    }

    var description: String { "threads \(threads), fds \(descriptors) (\(fileDescriptors) of cache files), RSS \(residentKiB / 1024) MiB (\(residentKiB) KiB)" }
}
