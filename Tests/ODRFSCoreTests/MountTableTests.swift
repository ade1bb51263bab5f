import ODRFSCore
import Testing

@Suite("Mount table")
struct MountTableTests {
    static let sample = """
    22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw
    95 29 0:52 / /mnt/with\\040space rw,nosuid,nodev,relatime shared:50 - fuse.odrfs odrfs rw,user_id=1000,group_id=1000
    96 29 0:53 / /mnt/back\\134slash rw - fuse.odrfs odrfs rw,user_id=0,group_id=0
    garbage line
    97 29 0:54 / /mnt/short rw -
    98 29 0:55 / /mnt/with\\040space rw shared:51 - fuse.odrfs odrfs rw,user_id=2000
    """

    @Test("mountpoints are unescaped, FUSE owners read, malformed lines skipped, the topmost mount wins")
    func parsing() {
        let table = MountTable(parsing: Self.sample)
        #expect(table.entries.count == 4)
        #expect(table.entry(at: "/mnt/with space")?.fuseOwner == 2000, "the later line is the mount on top")
        #expect(table.entry(at: "/mnt/with space")?.device == "0:55")
        #expect(table.entry(at: "/mnt/back\\slash")?.fuseOwner == 0)
        #expect(table.entry(at: "/mnt/with\\040space") == nil, "escaped text never matches a real path")
        #expect(table.entry(at: "/proc")?.filesystemType == "proc")
        #expect(table.entry(at: "/proc")?.fuseOwner == nil)
        #expect(table.entry(at: "/mnt/short") == nil)
    }

    @Test("hostile escapes never trap", arguments: ["\\", "\\9", "\\777", "\\0", "a\\12", "\\400\\377"])
    func hostileEscapes(field: String) {
        let line = "1 1 0:1 / /x\(field) rw - t s o"
        _ = MountTable(parsing: line)
    }

    // What the `mounttable` fuzz target checks. Split as Characters, U+0600 (a prepend mark)
    // glued the mountpoint to the options after it, and U+0301 (a combining mark) the type
    // to the source after it; the user who mounts picks both.
    @Test("a mountpoint ending in a prepend mark and a source starting with a combining mark read back exactly")
    func graphemesDoNotJoinFields() {
        let table = MountTable(parsing: """
        95 29 0:52 / /mnt/x\u{0600} rw,nosuid shared:50 - fuse.odrfs \u{0301}src rw,user_id=1000
        96 29 0:53 / /mnt/y rw - fuse.odrfs odrfs rw,user_id=1001
        """)
        #expect(table.entries.count == 2)
        #expect(table.entry(at: "/mnt/x\u{0600}")?.fuseOwner == 1000)
        #expect(table.entry(at: "/mnt/x\u{0600}")?.filesystemType == "fuse.odrfs")
        #expect(table.entry(at: "/mnt/x\u{0600}")?.source == "\u{0301}src")
        #expect(table.entry(at: "/mnt/y")?.fuseOwner == 1001)
    }

    @Test("the filesystem type is unescaped like the paths (the kernel escapes it too)")
    func typeIsUnescaped() {
        let table = MountTable(parsing: "95 29 0:52 / /mnt/x rw - fuse\\040x src rw,user_id=1000")
        #expect(table.entry(at: "/mnt/x")?.filesystemType == "fuse x")
    }

    // A mountpoint that is not UTF-8 (any user can `mkdir $'\xff'` and mount there) made the
    // String read of the whole file fail, which emptied the table for every other mount.
    @Test("bytes that are not UTF-8 spoil only their own field")
    func invalidUTF8() {
        var bytes = Array("95 29 0:52 / /mnt/".utf8) + [0xFF, 0xC3] + Array(" rw - fuse.odrfs odrfs rw,user_id=7\n".utf8)
        bytes += Array("96 29 0:53 / /mnt/y rw - fuse.odrfs odrfs rw,user_id=1001\n".utf8)
        let table = MountTable(parsing: bytes)
        #expect(table.entries.count == 2)
        #expect(table.entries.first?.mountpoint == "/mnt/\u{FFFD}\u{FFFD}")
        #expect(table.entries.first?.fuseOwner == 7)
        #expect(table.entry(at: "/mnt/y")?.fuseOwner == 1001)
    }

    @Test("the current table has the root filesystem")
    func current() {
        #expect(MountTable.current().entry(at: "/") != nil)
    }
}
