import Foundation

/// What a process holds at one moment, from /proc: threads, open descriptors and
/// resident memory. Used to check that a daemon under load does not grow.
struct ProcessSample: CustomStringConvertible {
    var threads: Int
    var descriptors: Int
    /// Descriptors of files under one of `loadFiles` (the cache's pack and download files,
    /// the origin's pack files: one or two per open reader or download in flight): they
    /// come and go with the load, unlike the rest.
    var loadDescriptors: Int
    var residentKiB: Int
    /// What the descriptors point to, by kind ("socket", "pipe", "anon_inode", a device,
    /// a load prefix, or another file's directory), for the message when a check fails.
    var kinds: [String: Int]
    /// Descriptors other than `loadDescriptors`: sockets, pipes, the FUSE device, the index.
    var otherDescriptors: Int { descriptors - loadDescriptors }

    /// Samples `pid`; nil if it is gone.
    init?(_ pid: pid_t, loadFiles prefixes: [String]) {
        let manager = FileManager.default
        guard let tasks = try? manager.contentsOfDirectory(atPath: "/proc/\(pid)/task"),
              let descriptors = try? manager.contentsOfDirectory(atPath: "/proc/\(pid)/fd"),
              let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        threads = tasks.count
        residentKiB = kib
        var kinds: [String: Int] = [:]
        var load = 0
        var counted = 0
        for name in descriptors {
            // Under load descriptors close between the listing and this readlink: those
            // are not counted at all (as "other", they once looked like 50 leaked ones).
            guard let target = try? manager.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(name)") else {
                kinds["closed while sampling", default: 0] += 1
                continue
            }
            counted += 1
            if let prefix = prefixes.first(where: { target.hasPrefix($0) }) {
                load += 1
                kinds[prefix, default: 0] += 1
            } else if let colon = target.firstIndex(of: ":"), !target.hasPrefix("/") {
                kinds[String(target[..<colon]), default: 0] += 1
            } else {
                kinds[target.hasPrefix("/dev/") ? target : (target as NSString).deletingLastPathComponent + "/", default: 0] += 1
            }
        }
        self.descriptors = counted
        loadDescriptors = load
        self.kinds = kinds
    }

    var description: String {
        "threads \(threads), fds \(descriptors) (\(loadDescriptors) of pack/download/origin files), RSS \(residentKiB / 1024) MiB (\(residentKiB) KiB)"
    }
}
