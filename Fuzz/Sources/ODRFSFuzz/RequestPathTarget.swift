/// The request target a client sends `odrfs serve` (`GET /packs/a%20b.pack`), before the
/// server touches the disk. What is accepted must be, byte by byte as the kernel reads a
/// path, free of `.` and `..` segments, empty segments, dot files, NUL and backslashes.
enum RequestPathTarget {
    static func run(_ text: String) {
        guard case .success(let path) = RequestPath.relative(text) else { return }
        let bytes = Array(path.utf8)
        check(!bytes.contains(0) && !bytes.contains(UInt8(ascii: "\\")), "target \(text.debugDescription) gave \(path.debugDescription), with a NUL or backslash")
        for segment in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            check(!segment.isEmpty && segment.first != UInt8(ascii: "."),
                  "target \(text.debugDescription) gave \(path.debugDescription), with an empty, dot or hidden segment")
        }
    }
}
