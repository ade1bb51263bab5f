import Foundation

/// A resource tree that exercises what a bundle can hold: tagged levels, a pack
/// shared by two tags, a multi-chunk file, an initial-install tag, empty files and
/// dirs, a symlink, spaces, Unicode and an executable mode.
enum TestBundle {
    static let spec = """
        tags:
          Level1: ["levels/1/**", "shared/forest/**"]
          Level2: ["levels/2/**", "shared/forest/**"]
          Level3: ["levels/3/**"]
          Big: ["big.bin"]
        initial-install: [Level3]
        preservation: { Level1: 0.5 }

        """

    /// Relative path → contents of every regular file. Computed once: the 3 MiB of
    /// pseudo-random bytes cost seconds of a cooperative-pool thread in a debug build.
    static let files: [String: [UInt8]] = {
        [
            "README.txt": Array("Base resources are always present.\n".utf8),
            "config/settings.json": Array("{\"volume\": 7}\n".utf8),
            "base dir with spaces/naïve café.txt": Array("unicode and spaces survive\n".utf8),
            "empty.txt": [],
            "tools/run.sh": Array("#!/bin/sh\necho hi\n".utf8),
            "levels/1/map.dat": pseudoRandom(65_536, seed: 1),
            "levels/1/sprites/hero.png": pseudoRandom(4_096, seed: 2),
            "levels/1/sprites/enemy.png": pseudoRandom(12_345, seed: 3),
            "levels/2/map.dat": pseudoRandom(70_000, seed: 4),
            "levels/2/ünïcödé name.txt": Array("level two\n".utf8),
            "levels/3/map.dat": pseudoRandom(30_000, seed: 5),
            "shared/forest/tree.png": pseudoRandom(20_000, seed: 6),
            "big.bin": pseudoRandom(3 * 1_048_576 + 123, seed: 7),
        ]
    }()

    /// Writes the tree and its `odr.yaml` under `root`.
    static func write(to root: String) throws {
        let manager = FileManager.default
        for (path, bytes) in files {
            let full = root + "/" + path
            try manager.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
        }
        chmod(root + "/tools/run.sh", 0o755)
        chmod(root + "/config/settings.json", 0o600)
        try manager.createDirectory(atPath: root + "/emptydir", withIntermediateDirectories: true)
        try manager.createSymbolicLink(atPath: root + "/readme-link", withDestinationPath: "README.txt")
        try spec.write(toFile: root + "/odr.yaml", atomically: true, encoding: .utf8)
    }

    static func pseudoRandom(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        // Filled in place, not with `map`: in a debug build that is several times faster,
        // and this runs on a cooperative-pool thread.
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            for index in 0..<count {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                buffer[index] = UInt8(truncatingIfNeeded: state)
            }
            initialized = count
        }
    }
}
