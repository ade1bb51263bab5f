import Glibc

/// How the filesystem appears in `mount(8)` output and what the kernel
/// enforces on it. Turned into `-o` arguments for `fuse_session_new`.
public struct MountOptions: Sendable {
    /// The "device" column of `mount`/`df` (`fsname=`), e.g. the origin URL.
    public var fsName: String
    /// Shown as `fuse.<subtype>` in the type column (`subtype=`).
    public var subtype: String
    /// Mount read-only (`ro`): the VFS then rejects writes with EROFS before they reach the daemon.
    public var readOnly = true
    /// Let users other than the mounting one see the files (`allow_other`;
    /// non-root needs `user_allow_other` in /etc/fuse.conf).
    public var allowOther = false
    /// Let the kernel check permissions from the mode bits (`default_permissions`)
    /// instead of asking the filesystem's `access`.
    public var defaultPermissions = true
    /// Largest read request the kernel may send (`max_read=`), in bytes; nil
    /// leaves the kernel's limit (1 MiB). The default, ``spliceSafeMaxRead(pipeMaxSize:)``,
    /// keeps read replies zero-copy. A `max_read=` in `extra` wins.
    public var maxRead: Int? = MountOptions.spliceSafeMaxRead()
    /// Raw `-o` values passed through unchanged, e.g. `["max_read=131072"]`.
    public var extra: [String] = []

    public init(fsName: String, subtype: String, readOnly: Bool = true, allowOther: Bool = false, defaultPermissions: Bool = true, extra: [String] = []) {
        self.fsName = fsName
        self.subtype = subtype
        self.readOnly = readOnly
        self.allowOther = allowOther
        self.defaultPermissions = defaultPermissions
        self.extra = extra
    }

    /// The `max_read` the session asks for, from `extra` if given there: libfuse
    /// 3.14 also wants it repeated in `init`'s connection info.
    var effectiveMaxRead: Int? {
        if let raw = extra.last(where: { $0.hasPrefix("max_read=") }) {
            return Int(raw.dropFirst("max_read=".count))
        }
        return maxRead
    }

    /// The argv for `fuse_session_new`: a program name, then one `-o` list.
    var arguments: [String] {
        var options = ["fsname=\(Self.escape(fsName))", "subtype=\(Self.escape(subtype))"]
        if readOnly { options.append("ro") }
        if allowOther { options.append("allow_other") }
        if defaultPermissions { options.append("default_permissions") }
        if let maxRead, !extra.contains(where: { $0.hasPrefix("max_read=") }) {
            options.append("max_read=\(maxRead)")
        }
        options += extra
        return [subtype.isEmpty ? "fusekit" : subtype, "-o", options.joined(separator: ",")]
    }

    /// The largest read size whose reply libfuse can splice.
    ///
    /// libfuse splices an fd-backed reply (`replyData(fileDescriptor:)`) through a
    /// per-thread pipe it grows to the reply size plus three pages. The kernel rounds
    /// that up to a power of two pages and refuses anything above
    /// `/proc/sys/fs/pipe-max-size` (1 MiB by default) without CAP_SYS_RESOURCE;
    /// libfuse then quietly falls back, for good, to reading every reply into a
    /// fresh buffer and copying it. With the kernel's default 1 MiB reads that is
    /// every large read, so stay four pages under the pipe limit.
    public static func spliceSafeMaxRead(pipeMaxSize: Int? = nil) -> Int {
        let page = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
        let limit = pipeMaxSize ?? currentPipeMaxSize() ?? (1 << 20)
        // Only a power of two pages is a size F_SETPIPE_SZ can reach.
        var usable = page
        while usable * 2 <= limit { usable *= 2 }
        return max(min(1 << 20, usable - 4 * page), page)
    }

    private static func currentPipeMaxSize() -> Int? {
        let fd = open("/proc/sys/fs/pipe-max-size", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 32)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        let text = String(decoding: bytes[..<count], as: UTF8.self)
        return Int(text.prefix { $0.isNumber }).flatMap { $0 > 0 ? $0 : nil }
    }

    /// fuse_opt splits option lists at commas; a backslash makes one literal.
    static func escape(_ value: String) -> String {
        var escaped = ""
        for character in value {
            if character == "," || character == "\\" {
                escaped.append("\\")
            }
            escaped.append(character)
        }
        return escaped
    }
}
