#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `renameat2(RENAME_EXCHANGE)`: swaps two paths atomically, so that a directory path never
/// stops naming a complete directory. Glibc declares it only under `_GNU_SOURCE`, which the
/// Swift Glibc module does not set; it is looked up at run time instead, and callers fall
/// back to two renames where it is missing (not Linux, old kernels, some filesystems).
enum AtomicExchange {
    private typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
    /// From <linux/fs.h>.
    private static let renameExchange: UInt32 = 1 << 1

    private static let function: RenameAt2? = {
        #if os(Linux)
        guard let symbol = dlsym(nil, "renameat2") else { return nil }
        return unsafeBitCast(symbol, to: RenameAt2.self)
        #else
        return nil
        #endif
    }()

    enum Outcome {
        case exchanged
        /// The system or filesystem cannot exchange; nothing was changed.
        case unsupported
        case failed(SystemCallError)
    }

    /// Swaps `a` and `b`; both must exist.
    static func exchange(_ a: String, _ b: String) -> Outcome {
        guard let function else { return .unsupported }
        if function(AT_FDCWD, a, AT_FDCWD, b, renameExchange) == 0 { return .exchanged }
        let code = errno
        return code == EINVAL || code == ENOSYS || code == ENOTSUP ? .unsupported : .failed(SystemCallError("renameat2", code))
    }
}
