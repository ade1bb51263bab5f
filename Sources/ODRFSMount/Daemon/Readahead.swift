import Foundation
import Logging
import ODRFSCore

/// The mount's readahead. The kernel gives a FUSE mount 128 KiB, which turns a
/// sequential read into 128 KiB requests; 4 MiB lets it send full 1 MiB requests
/// (max_pages) with several in flight. Needs root; failures are harmless.
enum Readahead {
    static let kibibytes = 4096

    /// Called once INIT is done (the kernel sets readahead then), off every FUSE thread
    /// (the probe thread, after a statfs went through the session): stat(2) of the
    /// mountpoint is answered by this mount, and its `st_dev` names the connection's
    /// backing device. Not the mount table: a read of it while other mounts come and go
    /// missed this mount's entry in a CI run, and the mount kept 128 KiB.
    static func raise(mountpoint: String, logger: Logger) {
        var info = stat()
        var result = stat(mountpoint, &info)
        while result != 0 && errno == EINTR { result = stat(mountpoint, &info) }
        let device: String
        if result == 0 {
            device = Self.name(of: UInt64(info.st_dev))
        } else if let entry = MountTable.current().entry(at: mountpoint) {
            device = entry.device
        } else {
            logger.debug("cannot raise readahead: the mountpoint is neither stat-able nor in the mount table", metadata: ["mountpoint": "\(mountpoint)"])
            return
        }
        let path = "/sys/class/bdi/\(device)/read_ahead_kb"
        do {
            try "\(kibibytes)\n".write(toFile: path, atomically: false, encoding: .utf8)
        } catch {
            logger.debug("cannot raise readahead", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }

    /// `major:minor` of a Linux `dev_t` (glibc's `major`/`minor` are macros Swift cannot
    /// call): the major in bits 8-19 and 44-63, the minor in bits 0-7 and 20-43.
    static func name(of device: UInt64) -> String {
        let major = ((device >> 8) & 0xFFF) | ((device >> 32) & 0xFFFF_F000)
        let minor = (device & 0xFF) | ((device >> 12) & 0xFFFF_FF00)
        return "\(major):\(minor)"
    }
}
