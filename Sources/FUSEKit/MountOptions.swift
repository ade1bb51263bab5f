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

    /// The argv for `fuse_session_new`: a program name, then one `-o` list.
    var arguments: [String] {
        var options = ["fsname=\(Self.escape(fsName))", "subtype=\(Self.escape(subtype))"]
        if readOnly { options.append("ro") }
        if allowOther { options.append("allow_other") }
        if defaultPermissions { options.append("default_permissions") }
        options += extra
        return [subtype.isEmpty ? "fusekit" : subtype, "-o", options.joined(separator: ",")]
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
