import Foundation

/// The kernel's table of mounts as `/proc/self/mountinfo` gives it — the one parser for
/// it in ODRFS (mountpoint checks, readahead, finding a mount's owner).
///
/// Each line reads `id parent major:minor root mountpoint options … - fstype source superoptions`;
/// the kernel escapes space, tab, newline and backslash in paths as octal `\ooo`, which
/// are unescaped here, so a mountpoint with a space compares equal to its real path.
/// Malformed lines are skipped, never trusted.
public struct MountTable: Sendable {
    /// One mounted filesystem.
    public struct Entry: Sendable, Equatable {
        /// The device, `major:minor` (the key of `/sys/class/bdi/<device>`).
        public var device: String
        /// The absolute mountpoint, unescaped.
        public var mountpoint: String
        /// The filesystem type, such as `fuse.odrfs`.
        public var filesystemType: String
        /// The mount source, unescaped.
        public var source: String
        /// Per-superblock options such as `user_id=1000`.
        public var superOptions: [String]

        /// The `user_id=` a FUSE mount records: the user who mounted it.
        public var fuseOwner: uid_t? {
            superOptions.first { $0.hasPrefix("user_id=") }.flatMap { uid_t($0.dropFirst("user_id=".count)) }
        }
    }

    public var entries: [Entry]

    /// Parses the text of a mountinfo file.
    public init(parsing text: String) {
        entries = text.split(separator: "\n").compactMap(Self.parseLine)
    }

    /// The current process's mount table (one read of `/proc/self/mountinfo`; empty if unreadable).
    public static func current() -> MountTable {
        MountTable(parsing: (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? "")
    }

    /// The last (topmost) mount at `mountpoint`, if any.
    public func entry(at mountpoint: String) -> Entry? {
        entries.last { $0.mountpoint == mountpoint }
    }

    private static func parseLine(_ line: Substring) -> Entry? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 7, let separator = fields.firstIndex(of: "-"), separator >= 6,
              separator + 2 < fields.count else { return nil }
        return Entry(
            device: String(fields[2]),
            mountpoint: unescape(fields[4]),
            filesystemType: String(fields[separator + 1]),
            source: unescape(fields[separator + 2]),
            superOptions: separator + 3 < fields.count ? fields[separator + 3].split(separator: ",").map(String.init) : []
        )
    }

    /// `\ooo` octal escapes back to bytes; anything else is kept as is.
    static func unescape(_ field: Substring) -> String {
        guard field.contains("\\") else { return String(field) }
        var bytes: [UInt8] = []
        var rest = Array(field.utf8)[...]
        while let byte = rest.popFirst() {
            if byte == UInt8(ascii: "\\"), rest.count >= 3,
               rest.prefix(3).allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "7")).contains($0) }) {
                let digits = rest.prefix(3).map { UInt16($0 - UInt8(ascii: "0")) }
                let value = digits[0] * 64 + digits[1] * 8 + digits[2]
                if value <= 0xFF {
                    bytes.append(UInt8(value))
                    rest = rest.dropFirst(3)
                    continue
                }
            }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
