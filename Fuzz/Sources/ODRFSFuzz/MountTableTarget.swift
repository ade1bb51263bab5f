import ODRFSCore

/// `/proc/self/mountinfo`, whose paths and mount sources are whatever any user mounted at
/// or named (fusermount lets every user pick both).
///
/// The input is tried twice: as the whole file (no trap, and every line the parser keeps
/// has an absolute mountpoint), and as the parts of one mount — mountpoint, filesystem type
/// and source, separated by NUL — written as the kernel writes them (space, tab, newline
/// and backslash as octal escapes), which must read back exactly, whatever characters
/// the parts hold.
enum MountTableTarget {
    static func run(_ bytes: UnsafeRawBufferPointer) {
        let table = MountTable(parsing: String(decoding: bytes, as: UTF8.self))
        for entry in table.entries {
            check(!entry.mountpoint.isEmpty, "a kept line has an empty mountpoint: \(entry)")
        }
        roundTrip(String(decoding: bytes, as: UTF8.self))
    }

    private static func roundTrip(_ text: String) {
        let parts = text.split(separator: "\0", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        let mountpoint = "/" + parts[0]
        // The kernel never shows an empty type or source field (an empty source reads "none").
        let type = parts.count > 1 && !parts[1].isEmpty ? parts[1] : "fuse.odrfs"
        let source = parts.count > 2 && !parts[2].isEmpty ? parts[2] : "none"
        let other = "22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw"
        let line = "95 29 0:52 / \(escape(mountpoint)) rw,nosuid shared:50 - \(escape(type)) \(escape(source)) rw,user_id=1000,group_id=1000"
        let table = MountTable(parsing: other + "\n" + line + "\n" + other)
        check(table.entries.count == 3, "\(line.debugDescription) and two plain lines gave \(table.entries.count) entries")
        guard table.entries.count == 3 else { return }
        let entry = table.entries[1]
        check(entry.mountpoint == mountpoint, "mountpoint \(mountpoint.debugDescription) read back as \(entry.mountpoint.debugDescription)")
        check(entry.filesystemType == type, "type \(type.debugDescription) read back as \(entry.filesystemType.debugDescription)")
        check(entry.source == source, "source \(source.debugDescription) read back as \(entry.source.debugDescription)")
        check(entry.fuseOwner == 1000, "user_id=1000 read back as \(String(describing: entry.fuseOwner))")
        check(table.entries[2].mountpoint == "/proc", "the line after \(line.debugDescription) was not read")
    }

    /// What the kernel's `seq_escape`/`mangle` does to paths, types and sources in mountinfo.
    private static func escape(_ field: String) -> String {
        var escaped: [UInt8] = []
        for byte in field.utf8 {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\\"):
                escaped += [UInt8(ascii: "\\"), UInt8(ascii: "0") + (byte >> 6), UInt8(ascii: "0") + ((byte >> 3) & 7), UInt8(ascii: "0") + (byte & 7)]
            default:
                escaped.append(byte)
            }
        }
        return String(decoding: escaped, as: UTF8.self)
    }
}
