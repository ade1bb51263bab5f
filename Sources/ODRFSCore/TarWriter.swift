/// Produces a deterministic pax tar archive piece by piece, tracking the offset of every byte so
/// that the caller learns where each file's content starts in the pack.
///
/// The caller owns the I/O: for each file it writes ``beginFile(path:size:permissions:modificationTime:)``'s
/// header bytes, then exactly `size` content bytes, then ``endFile()``'s padding; and ``finish()``
/// at the end. Headers carry uid/gid 0, empty user and group names and the source's mode and
/// mtime, so the same files make the same bytes on any machine. Names longer than 100 bytes or
/// not ASCII, sizes above 8 GiB and mtimes outside ustar's range go into a pax 'x' header.
public struct TarWriter: Sendable {
    /// Bytes handed out so far, i.e. the offset of the next byte of the archive.
    public private(set) var offset: UInt64 = 0
    private var pendingContent: UInt64?

    public init() {}

    /// Header blocks for a regular file, and the pack offset of its first content byte.
    public mutating func beginFile(path: String, size: UInt64, permissions: UInt32,
                                   modificationTime: Timestamp) -> (header: [UInt8], contentOffset: UInt64) {
        precondition(pendingContent == nil, "beginFile called before endFile")
        let nameBytes = Array(path.utf8)
        var pax: [(String, String)] = []
        let needsPath = nameBytes.count > PackFormat.maxNameBytes || !nameBytes.allSatisfy { $0 < 0x80 && $0 != 0 }
        if needsPath { pax.append(("path", path)) }
        if size > PackFormat.maxOctalSize { pax.append(("size", String(size))) }
        let seconds = modificationTime.seconds
        if seconds < 0 || UInt64(seconds) > PackFormat.maxOctalSize { pax.append(("mtime", String(seconds))) }

        var header: [UInt8] = []
        if !pax.isEmpty {
            let body = Self.paxRecords(pax)
            header += Self.ustarHeader(name: Array(Self.asciiFallback(path, prefix: "PaxHeaders/").utf8), size: UInt64(body.count),
                                       mode: 0o644, mtime: 0, type: UInt8(ascii: "x"))
            header += body
            header += [UInt8](repeating: 0, count: PackFormat.paddingLength(forContentSize: UInt64(body.count)))
        }
        let ustarName = needsPath ? Array(Self.asciiFallback(path, prefix: "").utf8) : nameBytes
        header += Self.ustarHeader(name: ustarName, size: size > PackFormat.maxOctalSize ? 0 : size,
                                   mode: permissions & 0o7777,
                                   mtime: (seconds < 0 || UInt64(seconds) > PackFormat.maxOctalSize) ? 0 : UInt64(seconds),
                                   type: UInt8(ascii: "0"))
        offset += UInt64(header.count)
        pendingContent = size
        return (header, offset)
    }

    /// Padding after the content of the file begun last.
    public mutating func endFile() -> [UInt8] {
        guard let size = pendingContent else { preconditionFailure("endFile called without beginFile") }
        pendingContent = nil
        let padding = PackFormat.paddingLength(forContentSize: size)
        offset += size + UInt64(padding)
        return [UInt8](repeating: 0, count: padding)
    }

    /// The end-of-archive blocks.
    public mutating func finish() -> [UInt8] {
        precondition(pendingContent == nil, "finish called with a file still open")
        offset += UInt64(PackFormat.endOfArchive.count)
        return PackFormat.endOfArchive
    }

    /// "<len> key=value\n" records, where len counts the whole record including its own digits.
    static func paxRecords(_ pairs: [(String, String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (key, value) in pairs {
            let payload = " \(key)=\(value)\n".utf8.count
            var length = payload + String(payload).count
            if String(length).count != String(payload).count { length = payload + String(length).count }
            out += Array("\(length) \(key)=\(value)\n".utf8)
        }
        return out
    }

    /// A ≤100-byte ASCII stand-in for readers that ignore pax headers: the path's ASCII bytes,
    /// others replaced by '_', keeping the tail (the file name) when too long.
    static func asciiFallback(_ path: String, prefix: String) -> String {
        let ascii = String(decoding: path.utf8.map { $0 < 0x80 && $0 != 0 ? $0 : UInt8(ascii: "_") }, as: UTF8.self)
        let budget = PackFormat.maxNameBytes - prefix.utf8.count
        return prefix + String(ascii.utf8.suffix(budget).map { Character(Unicode.Scalar($0)) })
    }

    static func ustarHeader(name: [UInt8], size: UInt64, mode: UInt32, mtime: UInt64, type: UInt8) -> [UInt8] {
        var block = [UInt8](repeating: 0, count: PackFormat.blockSize)
        func put(_ bytes: [UInt8], at offset: Int) {
            for (i, byte) in bytes.enumerated() { block[offset + i] = byte }
        }
        func octal(_ value: UInt64, width: Int) -> [UInt8] {
            // width - 1 zero-padded digits and a NUL, as GNU and BSD tar write them.
            let digits = String(value, radix: 8)
            return Array((String(repeating: "0", count: max(0, width - 1 - digits.count)) + digits).utf8) + [0]
        }
        put(Array(name.prefix(PackFormat.maxNameBytes)), at: 0)
        put(octal(UInt64(mode), width: 8), at: 100)
        put(octal(0, width: 8), at: 108)              // uid
        put(octal(0, width: 8), at: 116)              // gid
        put(octal(size, width: 12), at: 124)
        put(octal(mtime, width: 12), at: 136)
        put([UInt8](repeating: UInt8(ascii: " "), count: 8), at: 148)   // checksum counts as spaces
        block[156] = type
        put(Array("ustar\0".utf8), at: 257)
        put(Array("00".utf8), at: 263)
        put(octal(0, width: 8), at: 329)              // devmajor
        put(octal(0, width: 8), at: 337)              // devminor
        let checksum = block.reduce(0) { $0 + UInt64($1) }
        put(Array((String(repeating: "0", count: 6 - String(checksum, radix: 8).count) + String(checksum, radix: 8)).utf8) + [0, UInt8(ascii: " ")], at: 148)
        return block
    }
}
