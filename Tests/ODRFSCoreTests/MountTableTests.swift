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

    @Test("the current table has the root filesystem")
    func current() {
        #expect(MountTable.current().entry(at: "/") != nil)
    }
}
