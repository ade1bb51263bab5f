import Foundation

/// The dist dir as the server sees it: turns a request target into an open file that is
/// guaranteed to lie inside the directory, or into a refusal.
///
/// Defence in depth, because the token only says who may read, not what:
/// 1. the raw target is checked before and after percent-decoding (`..`, `.`, `%2e%2e`,
///    empty segments such as `//etc`, NUL, backslashes, absolute-form targets → 400);
/// 2. dot files are never served (an operator's token file may sit beside the packs) → 404;
/// 3. the path is resolved with `realpath` and must stay under the resolved root, so a
///    symlink pointing outside is refused → 404;
/// 4. the final component must be a regular file (`lstat`), is opened with `O_NOFOLLOW` and
///    `O_NONBLOCK` (a FIFO swapped in after the `lstat` must not block a server thread in
///    `open`), and the descriptor must be a regular file too (`fstat`) → 404;
/// 5. the opened descriptor's own path (`/proc/self/fd`) must still lie under the root:
///    a directory swapped for a symlink between steps 3 and 4 is caught → 404.
///
/// A failure that says nothing about the file (out of descriptors or memory) is 503 with
/// Retry-After, never 404: a fetcher treats 404 as permanent.
struct DistDirectory: Sendable {
    /// The dist dir with every symlink resolved.
    let root: String
    /// Resolved paths that are never served even if they lie inside the root (the token file).
    let excluded: Set<String>

    init(path: String, excluding secretFiles: [String] = []) throws(OriginServerError) {
        guard let resolved = Self.resolve(path) else {
            throw OriginServerError(.distDirectory, "dist dir \(path) does not exist or is not readable")
        }
        var info = stat()
        guard stat(resolved, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else {
            throw OriginServerError(.distDirectory, "\(path) is not a directory; pass the dist dir made by `odrfs build`")
        }
        self.root = resolved
        self.excluded = Set(secretFiles.compactMap(Self.resolve))
    }

    /// A request the server will not answer with a file, with the status to send and a
    /// reason for the access log (never sent to the client).
    struct Refusal: Error {
        enum Status { case badRequest, forbidden, notFound, unavailable }
        let status: Status
        let reason: String

        /// The refusal for a failed `open` or `realpath`: only errors about the file itself
        /// are 404 (or 403); running out of descriptors or memory is the server's problem,
        /// temporary, and must not tell the client the file does not exist.
        init(errno code: Int32) {
            let reason = String(cString: strerror(code))
            switch code {
            case EACCES, EPERM:
                self.init(status: .forbidden, reason: reason)
            case ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG, EISDIR, ENXIO, ENODEV:
                self.init(status: .notFound, reason: reason)
            default:
                // EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN, EIO, ...
                self.init(status: .unavailable, reason: reason)
            }
        }

        init(status: Status, reason: String) {
            self.status = status
            self.reason = reason
        }
    }

    /// Opens the file named by `target` (the request's path, query already removed).
    func open(target: String) throws(Refusal) -> ServedFile {
        let relative = try Self.relativePath(of: target)
        let candidate = root + "/" + relative
        guard let resolved = Self.resolve(candidate) else {
            throw Refusal(errno: errno)
        }
        guard resolved.hasPrefix(root + "/") else {
            throw Refusal(status: .notFound, reason: "resolves outside the dist dir")
        }
        guard !excluded.contains(resolved) else {
            throw Refusal(status: .notFound, reason: "secret file")
        }
        return try openResolved(resolved)
    }

    /// Step 4 and 5 for a path that `realpath` put under the root: what is served is the
    /// descriptor, so its own path is checked, not the name it was opened by.
    func openResolved(_ resolved: String) throws(Refusal) -> ServedFile {
        // lstat first so that a FIFO or device node is never opened at all (opening some
        // devices has side effects); the fstat below catches one swapped in meanwhile.
        var named = stat()
        guard lstat(resolved, &named) == 0 else { throw Refusal(errno: errno) }
        guard (named.st_mode & S_IFMT) == S_IFREG else {
            throw Refusal(status: .notFound, reason: "not a regular file")
        }
        // O_NONBLOCK: opening a FIFO for reading blocks until a writer appears; on a regular
        // file the flag changes nothing (pread never blocks on it).
        let fd = Glibc.open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { throw Refusal(errno: errno) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw Refusal(status: .notFound, reason: "not a regular file")
        }
        guard let opened = Self.resolve("/proc/self/fd/\(fd)"), opened.hasPrefix(root + "/"), !excluded.contains(opened) else {
            close(fd)
            throw Refusal(status: .notFound, reason: "moved outside the dist dir while being opened")
        }
        return ServedFile(descriptor: fd, status: info)
    }

    /// Validates the raw target and returns the decoded path relative to the root
    /// (``RequestPath``).
    static func relativePath(of target: String) throws(Refusal) -> String {
        switch RequestPath.relative(target) {
        case .success(let path): return path
        case .failure(.malformed(let reason)): throw Refusal(status: .badRequest, reason: reason)
        case .failure(.hidden): throw Refusal(status: .notFound, reason: "hidden file")
        }
    }

    private static func resolve(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}
