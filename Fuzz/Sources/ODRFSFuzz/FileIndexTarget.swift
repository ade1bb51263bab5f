import ODRFSCore

/// The binary file index (`index/<hash>.odrx`) as a mount maps it.
enum FileIndexTarget {
    static func run(_ bytes: [UInt8]) {
        guard let index = try? FileIndex(bytes: bytes) else { return }
        // Validation promises that every accessor is safe on every entry, and that names
        // are sorted so lookups find each child under its own name.
        for raw in 0..<UInt32(index.entryCount) {
            let number = EntryNumber(raw)
            _ = index.entry(number)
            _ = index.symlinkTarget(of: number)
            // The digest table: only regular files have a hash, and it reads back as 32 bytes.
            if let digest = index.sha256(of: number) {
                check(index.entry(number)?.kind == .regularFile, "\(number) has a hash but is not a regular file")
                check(digest.digestBytes.count == ContentHash.byteCount, "\(number)'s hash is not 32 bytes")
            }
            // The block table: only non-empty regular files have block hashes, exactly
            // ⌈size / blockSize⌉ of them, and they read back without leaving the mapping.
            if let hashes = index.blockHashes(of: number) {
                let size = index.entry(number)?.size ?? 0
                let blockSize = UInt64(index.blockSize?.value ?? 0)
                check(index.entry(number)?.kind == .regularFile && size > 0, "\(number) has block hashes but is not a non-empty file")
                check(blockSize > 0 && UInt64(hashes.count) == size / blockSize + (size % blockSize == 0 ? 0 : 1),
                      "\(number) has \(hashes.count) block hashes for \(size) bytes")
            }
            let path = index.path(of: number)
            check(index.lookup(path: path) == number, "\(number) is not found at its own path \(path)")
            for child in index.children(of: number) {
                let found = index.withNameBytes(of: EntryNumber(child)) { index.lookup(parent: number, name: $0) }
                check(found == EntryNumber(child), "child \(child) of \(number) is not found by its name")
            }
        }
        // Out-of-range numbers must answer "nothing", not read past the mapping.
        let beyond = EntryNumber(UInt32(truncatingIfNeeded: index.entryCount))
        check(index.entry(beyond) == nil, "an entry past the end exists")
        _ = index.children(of: beyond)
        _ = index.path(of: beyond)
        check(index.sha256(of: beyond) == nil, "an entry past the end has a hash")
        check(index.blockHashes(of: beyond) == nil, "an entry past the end has block hashes")
        for number in index.filesWithBlockHashes {
            check(index.blockHashes(of: number) != nil, "\(number) is listed with block hashes but has none")
        }
    }
}
