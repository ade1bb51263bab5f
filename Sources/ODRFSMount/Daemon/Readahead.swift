import Foundation
import Logging
import ODRFSCore

/// The mount's readahead. The kernel gives a FUSE mount 128 KiB, which turns a
/// sequential read into 128 KiB requests; 4 MiB lets it send full 1 MiB requests
/// (max_pages) with several in flight. Needs root; failures are harmless.
enum Readahead {
    static let kibibytes = 4096

    /// Called once INIT is done (the kernel sets readahead then). Not stat(2) of the
    /// mountpoint: the device comes from the mount table.
    static func raise(mountpoint: String, logger: Logger) {
        guard let device = MountTable.current().entry(at: mountpoint)?.device else { return }
        let path = "/sys/class/bdi/\(device)/read_ahead_kb"
        do {
            try "\(kibibytes)\n".write(toFile: path, atomically: false, encoding: .utf8)
        } catch {
            logger.debug("cannot raise readahead", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }
}
