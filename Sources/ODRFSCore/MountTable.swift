import Foundation

/// The kernel's table of mounts as `/proc/self/mountinfo` gives it — the one parser for
/// it in ODRFS (mountpoint checks, readahead, finding a mount's owner).
///
/// Each line reads `id parent major:minor root mountpoint options … - fstype source superoptions`;
/// the kernel escapes space, tab, newline and backslash in paths as octal `\ooo`, which
/// are unescaped here, so a mountpoint with a space compares equal to its real path.
/// Malformed lines are skipped, never trusted.
///
/// The file is split as bytes, on the bytes `\n` and space, never as Swift `Character`s:
/// any user may mount at (or name a mount source) with any bytes, and a `Character` split
/// would glue a field to its neighbour when it ends in a prepend mark or the next starts
/// with a combining one, or a line to the next when it ends in `\r`. Bytes that are not
/// UTF-8 spoil only their own field (decoded with replacement characters), not the table.
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
        self.init(parsing: Array(text.utf8))
    }

    /// Parses the bytes of a mountinfo file, which need not be UTF-8.
    public init(parsing bytes: [UInt8]) {
        entries = bytes.split(separator: UInt8(ascii: "\n")).compactMap(Self.parseLine)
    }

    /// The current process's mount table (empty if `/proc/self/mountinfo` is unreadable).
    ///
    /// The kernel hands the file out a page at a time and drops its lock between pages, so
    /// one read taken while other mounts come and go is not a snapshot: twice a full test
    /// run saw a mount that had answered for seconds missing from it. The file is read
    /// until two reads agree (at most `attempts` times).
    public static func current(attempts: Int = 6) -> MountTable {
        var previous = readMountinfo()
        for _ in 1..<max(attempts, 1) {
            let next = readMountinfo()
            if next == previous { break }
            previous = next
        }
        return MountTable(parsing: Array(previous))
    }

    private static func readMountinfo() -> Data {
        (try? Data(contentsOf: URL(fileURLWithPath: "/proc/self/mountinfo"))) ?? Data()
    }

    /// The last (topmost) mount at `mountpoint`, if any.
    public func entry(at mountpoint: String) -> Entry? {
        entries.last { $0.mountpoint == mountpoint }
    }

    private static func parseLine(_ line: ArraySlice<UInt8>) -> Entry? {
        let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        guard fields.count >= 7, let separator = fields.firstIndex(where: { $0.elementsEqual([UInt8(ascii: "-")]) }),
              separator >= 6, separator + 2 < fields.count else { return nil }
        return Entry(
            device: String(decoding: fields[2], as: UTF8.self),
            mountpoint: unescape(fields[4]),
            filesystemType: unescape(fields[separator + 1]),
            source: unescape(fields[separator + 2]),
            superOptions: separator + 3 < fields.count
                ? fields[separator + 3].split(separator: UInt8(ascii: ",")).map { String(decoding: $0, as: UTF8.self) }
                : []
        )
    }

    /// `\ooo` octal escapes back to bytes, then UTF-8 (invalid sequences become U+FFFD).
    static func unescape(_ field: ArraySlice<UInt8>) -> String {
        guard field.contains(UInt8(ascii: "\\")) else { return String(decoding: field, as: UTF8.self) }
        var bytes: [UInt8] = []
        var rest = field
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
