import FUSEKit
import Glibc
import ODRFSCore

/// Builds kernel attributes from index entries. Files belong to the user running
/// the daemon; sizes, modes and mtimes are the bundle's own.
struct AttributeFactory: Sendable {
    let inodes: InodeMap
    let uid: UInt32
    let gid: UInt32
    /// When the mount started: the times of the virtual files.
    let mountTime: Timespec

    /// A bundle version is immutable, so the kernel may cache names and attributes for long.
    static let bundleTimeout: Double = 86_400
    /// Large enough that `cat` and `cp` read in big requests.
    static let preferredBlockSize: UInt32 = 128 * 1024

    func attributes(of entry: IndexEntry, number: EntryNumber) -> FileAttributes {
        let type: UInt32
        var linkCount: UInt32 = 1
        switch entry.kind {
        case .directory:
            type = UInt32(S_IFDIR)
            linkCount = 2 + entry.subdirectoryCount
        case .regularFile:
            type = UInt32(S_IFREG)
        case .symlink:
            type = UInt32(S_IFLNK)
        }
        let time = Timespec(seconds: entry.modificationTime.seconds, nanoseconds: entry.modificationTime.nanoseconds)
        var attributes = FileAttributes(inode: inodes.inode(for: number), mode: type | entry.permissions)
        attributes.linkCount = linkCount
        attributes.size = entry.size
        attributes.uid = uid
        attributes.gid = gid
        attributes.modificationTime = time
        attributes.accessTime = time
        attributes.changeTime = time
        attributes.blockSize = Self.preferredBlockSize
        return attributes
    }

    var controlDirectory: FileAttributes {
        virtual(inodes.controlDirectory, mode: UInt32(S_IFDIR) | 0o555, links: 2)
    }

    var statusFile: FileAttributes {
        virtual(inodes.statusFile, mode: UInt32(S_IFREG) | 0o444, links: 1)
    }

    private func virtual(_ inode: InodeNumber, mode: UInt32, links: UInt32) -> FileAttributes {
        var attributes = FileAttributes(inode: inode, mode: mode)
        attributes.linkCount = links
        attributes.uid = uid
        attributes.gid = gid
        attributes.modificationTime = mountTime
        attributes.accessTime = mountTime
        attributes.changeTime = mountTime
        attributes.blockSize = Self.preferredBlockSize
        return attributes
    }
}
