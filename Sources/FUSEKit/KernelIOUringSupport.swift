import Glibc

/// The kernel side of FUSE over io_uring: built in (`CONFIG_FUSE_IO_URING`, Linux
/// 6.14+) and switched on by the fuse module parameter `enable_uring`, which only
/// root may set and which the kernel reads when it sends INIT.
enum KernelIOUringSupport {
    static let parameterPath = "/sys/module/fuse/parameters/enable_uring"

    /// Turns the module parameter on if needed. nil when the kernel will offer
    /// io_uring at the next INIT, else the reason it will not, in words.
    static func enable(parameterPath: String = parameterPath) -> String? {
        guard let value = read(parameterPath) else {
            return "this kernel has no FUSE over io_uring (\(parameterPath) is missing; needs Linux 6.14+ with CONFIG_FUSE_IO_URING)"
        }
        if value == "Y" || value == "1" { return nil }
        let descriptor = open(parameterPath, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return "the fuse module parameter enable_uring is N and cannot be set (\(Errno.current)); as root: echo Y > \(parameterPath)"
        }
        defer { close(descriptor) }
        let written = write(descriptor, "Y\n", 2)
        guard written == 2, read(parameterPath) == "Y" else {
            return "the fuse module parameter enable_uring is N and writing Y failed (\(Errno.current)); as root: echo Y > \(parameterPath)"
        }
        return nil
    }

    private static func read(_ parameterPath: String) -> String? {
        let descriptor = open(parameterPath, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: bytes[..<count].filter { $0 > 0x20 }, as: UTF8.self)
    }
}
