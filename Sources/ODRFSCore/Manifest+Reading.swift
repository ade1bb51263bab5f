import Foundation

/// `manifest.json` read with ``JSONCursor`` into the manifest's types directly, member by
/// member, instead of through `JSONDecoder`: at 100,000 packs (issue 28's ten million files)
/// the document is 80 MB, and `JSONDecoder` took 1.6 s and ~250 MiB for it. The result is
/// exactly what the `Decodable` conformances produce (`ManifestReadingTests` and the manifest
/// fuzz target compare the two); unknown members are skipped as `Decodable` skips them, `null`
/// stands for an absent optional member, and a member named twice is refused.
///
/// The few small parts with rules of their own (`variants` declarations) are still decoded
/// with `Decodable`, from their bytes alone.
public enum ManifestReader {
    typealias Failure = JSONCursor.Failure

    static func read(_ data: Data) throws(ManifestError) -> Manifest {
        let result: Result<Manifest, Failure> = data.withUnsafeBytes { raw in
            var cursor = JSONCursor(raw)
            do throws(Failure) {
                let manifest = try document(&cursor)
                try cursor.expectEnd()
                return .success(manifest)
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let manifest):
            return manifest
        case .failure(let failure):
            throw ManifestError(reading: failure)
        }
    }

    /// The file index `data` names, read without decoding the rest: `odrfs build` writes
    /// `index` before `packs`, so this reads a few hundred bytes of a manifest of any size.
    /// Nil when the document has no such member or it is malformed or unsafe (a path that
    /// leaves the dist dir, a size beyond ``BundleLimits``): then the caller waits for
    /// ``Manifest/decode(_:)``, which says what is wrong. It lets a mount start the index's
    /// download while the packs are decoded; trust nothing else before that decode.
    public static func indexReference(in data: Data) -> IndexReference? {
        data.withUnsafeBytes { raw -> IndexReference? in
            var cursor = JSONCursor(raw)
            do throws(Failure) {
                var object = try cursor.enterObject()
                while let key = try cursor.nextKey(&object) {
                    guard key == "index" else {
                        try cursor.skipValue()
                        continue
                    }
                    let reference = try indexReference(&cursor)
                    return reference.problem == nil ? reference : nil
                }
            } catch {
                return nil
            }
            return nil
        }
    }

    // MARK: the document

    private static func document(_ cursor: inout JSONCursor) throws(Failure) -> Manifest {
        var format: Int?, bundleVersion: ContentHash?, chunkSize: ByteCount?, index: IndexReference?
        var packs: [PackDescriptor]?, tags: [TagDescriptor]?, initialInstall: [Tag]?, prefetch: [Tag]?
        var revision: Int64?, expires: Int64?, mirrors: [String]?, variants: [VariantDeclaration]?, bundle: BundleIdentity?
        var seen = Set<String>()
        var object = try cursor.enterObject()
        while let key = try cursor.nextKey(&object) {
            try once(key, &seen)
            switch key {
            case "format": format = try inside(key, &cursor) { c throws(Failure) in try int(&c) }
            case "bundleVersion": bundleVersion = try inside(key, &cursor) { c throws(Failure) in try hash(&c) }
            case "chunkSize": chunkSize = try inside(key, &cursor) { c throws(Failure) in ByteCount(try c.readInteger()) }
            case "index": index = try inside(key, &cursor) { c throws(Failure) in try indexReference(&c) }
            case "packs": packs = try inside(key, &cursor) { c throws(Failure) in try array(&c) { c throws(Failure) in try pack(&c) } }
            case "tags":
                // Each tag lists its packs by id (500,000 ids for 100,000 packs of five tags): when
                // the packs came first, as `odrfs build` writes them, the ids share their storage.
                let ids = PackIDs(packs ?? [])
                tags = try inside(key, &cursor) { c throws(Failure) in try array(&c) { c throws(Failure) in try tag(&c, ids: ids) } }
            case "initialInstall": initialInstall = try inside(key, &cursor) { c throws(Failure) in try array(&c) { c throws(Failure) in Tag(try c.readString()) } }
            case "prefetch": prefetch = try inside(key, &cursor) { c throws(Failure) in try array(&c) { c throws(Failure) in Tag(try c.readString()) } }
            case "revision": revision = try optional(key, &cursor) { c throws(Failure) in try c.readInteger() }
            case "expires": expires = try optional(key, &cursor) { c throws(Failure) in try c.readInteger() }
            case "mirrors": mirrors = try optional(key, &cursor) { c throws(Failure) in try array(&c) { c throws(Failure) in try c.readString() } }
            case "variants": variants = try optional(key, &cursor) { c throws(Failure) in try decodable([VariantDeclaration].self, &c) }
            case "bundle": bundle = try optional(key, &cursor) { c throws(Failure) in BundleIdentity(unvalidated: try c.readString()) }
            default: try cursor.skipValue()
            }
        }
        var manifest = Manifest(format: try required(format, "format"), bundleVersion: try required(bundleVersion, "bundleVersion"),
                                chunkSize: try required(chunkSize, "chunkSize"), index: try required(index, "index"),
                                packs: try required(packs, "packs"), tags: try required(tags, "tags"),
                                initialInstall: try required(initialInstall, "initialInstall"), prefetch: try required(prefetch, "prefetch"),
                                revision: revision ?? Manifest.unrevisioned, expires: expires)
        manifest.mirrors = mirrors
        manifest.variants = variants
        manifest.bundle = bundle
        return manifest
    }

    private static func indexReference(_ cursor: inout JSONCursor) throws(Failure) -> IndexReference {
        var file: String?, bytes: ByteCount?, sha256: ContentHash?, entries: Int?
        var seen = Set<String>()
        var object = try cursor.enterObject()
        while let key = try cursor.nextKey(&object) {
            try once(key, &seen)
            switch key {
            case "file": file = try inside(key, &cursor) { c throws(Failure) in try c.readString() }
            case "bytes": bytes = try inside(key, &cursor) { c throws(Failure) in ByteCount(try c.readInteger()) }
            case "sha256": sha256 = try inside(key, &cursor) { c throws(Failure) in try hash(&c) }
            case "entries": entries = try inside(key, &cursor) { c throws(Failure) in try int(&c) }
            default: try cursor.skipValue()
            }
        }
        return IndexReference(file: try required(file, "file"), bytes: try required(bytes, "bytes"),
                              sha256: try required(sha256, "sha256"), entries: try required(entries, "entries"))
    }

    private static func pack(_ cursor: inout JSONCursor) throws(Failure) -> PackDescriptor {
        var id: PackID?, tags: [Tag]?, file: String?, bytes: ByteCount?, sha256: ContentHash?, chunks: [ContentHash]?, files: Int?
        var compression: PackCompression?, variant: VariantAssignment?
        // Seven to nine members: a bit set, not a `Set<String>`, keeps this allocation-free.
        var seen: UInt16 = 0
        var object = try cursor.enterObject()
        while let key = try cursor.nextKey(&object) {
            let bit: UInt16
            switch key {
            case "id": bit = 1; id = try inside(key, &cursor) { c throws(Failure) in PackID(try c.readString()) }
            case "tags": bit = 2; tags = try inside(key, &cursor) { c throws(Failure) in try array(&c) { c throws(Failure) in Tag(try c.readString()) } }
            case "file": bit = 4; file = try inside(key, &cursor) { c throws(Failure) in try c.readString() }
            case "bytes": bit = 8; bytes = try inside(key, &cursor) { c throws(Failure) in ByteCount(try c.readInteger()) }
            case "sha256":
                bit = 16
                let digest = try inside(key, &cursor) { c throws(Failure) in try hash(&c) }
                // A pack of one chunk has its own hash as that chunk's: one string for both.
                if let only = chunks?.first, chunks?.count == 1, only == digest { sha256 = only } else { sha256 = digest }
            case "chunks": bit = 32; chunks = try inside(key, &cursor) { c throws(Failure) in try array(&c) { c throws(Failure) in try hash(&c) } }
            case "files": bit = 64; files = try inside(key, &cursor) { c throws(Failure) in try int(&c) }
            case "compression": bit = 128; compression = try optional(key, &cursor) { c throws(Failure) in try packCompression(&c) }
            case "variant": bit = 256; variant = try optional(key, &cursor) { c throws(Failure) in try variantAssignment(&c) }
            default: bit = 0; try cursor.skipValue()
            }
            try once(bit, key, &seen)
        }
        var descriptor = PackDescriptor(id: try required(id, "id"), tags: try required(tags, "tags"), file: try required(file, "file"),
                                        bytes: try required(bytes, "bytes"), sha256: try required(sha256, "sha256"),
                                        chunks: try required(chunks, "chunks"), files: try required(files, "files"),
                                        compression: compression)
        // As decoded, not normalized by the initializer: `"variant": {}` stays an empty assignment.
        descriptor.variant = variant
        return descriptor
    }

    private static func packCompression(_ cursor: inout JSONCursor) throws(Failure) -> PackCompression {
        var format: String?, bytes: ByteCount?, frames: [PackCompression.Frame]?, frameTable: String?
        var seen: UInt16 = 0
        var object = try cursor.enterObject()
        while let key = try cursor.nextKey(&object) {
            switch key {
            case "format": try once(1, key, &seen); format = try inside(key, &cursor) { c throws(Failure) in try c.readString() }
            case "bytes": try once(2, key, &seen); bytes = try inside(key, &cursor) { c throws(Failure) in ByteCount(try c.readInteger()) }
            case "frames": try once(4, key, &seen); frames = try optional(key, &cursor) { c throws(Failure) in try array(&c) { c throws(Failure) in try frame(&c) } }
            case "frameTable": try once(8, key, &seen); frameTable = try optional(key, &cursor) { c throws(Failure) in try c.readString() }
            default: try cursor.skipValue()
            }
        }
        let listed: [PackCompression.Frame]
        switch (frames, frameTable) {
        case (let frames?, nil):
            listed = frames
        case (nil, let table?):
            guard let decoded = PackCompression.decodeFrameTable(table) else {
                throw Failure(message: "frameTable is not base64 of (length, size) LEB128 pairs within 2^52", offset: nil).inside("frameTable")
            }
            listed = decoded
        default:
            throw Failure(message: "a compressed pack has either frames or a frameTable, not \(frames == nil ? "neither" : "both")", offset: nil)
        }
        return PackCompression(format: try required(format, "format"), bytes: try required(bytes, "bytes"), frames: listed)
    }

    private static func frame(_ cursor: inout JSONCursor) throws(Failure) -> PackCompression.Frame {
        var offset: Int64?, length: Int64?, size: Int64?
        var seen: UInt16 = 0
        var object = try cursor.enterObject()
        while let key = try cursor.nextKey(&object) {
            switch key {
            case "offset": try once(1, key, &seen); offset = try inside(key, &cursor) { c throws(Failure) in try c.readInteger() }
            case "length": try once(2, key, &seen); length = try inside(key, &cursor) { c throws(Failure) in try c.readInteger() }
            case "size": try once(4, key, &seen); size = try optional(key, &cursor) { c throws(Failure) in try c.readInteger() }
            default: try cursor.skipValue()
            }
        }
        return PackCompression.Frame(offset: try required(offset, "offset"), length: try required(length, "length"), size: size)
    }

    /// `{"tcf": "astc"}`: every key and value checked, as `VariantAssignment`'s `Decodable` does.
    private static func variantAssignment(_ cursor: inout JSONCursor) throws(Failure) -> VariantAssignment {
        var pairs: [(VariantKey, VariantValue)] = []
        var seen = Set<String>()
        var object = try cursor.enterObject()
        while let key = try cursor.nextKey(&object) {
            try once(key, &seen)
            let value = try inside(key, &cursor) { c throws(Failure) in try c.readString() }
            guard let variantKey = VariantKey(validating: key), let variantValue = VariantValue(validating: value) else {
                throw Failure(message: "variant '\(key)=\(value)' is not a well-formed key and value", offset: cursor.position)
            }
            pairs.append((variantKey, variantValue))
        }
        // Keys are unique (checked above), so the assignment exists.
        return VariantAssignment(pairs) ?? .none
    }

    /// The packs' ids, to hand out the pack's own `PackID` (one string, shared) for an equal
    /// id. A tag must list exactly the packs holding it, in order (validation checks it), so
    /// the id expected next is known: one string comparison, where a dictionary of 100,000 ids
    /// would cost a cache miss or two per lookup.
    private struct PackIDs {
        private let packs: [PackDescriptor]
        private let holders: [Tag: [Int]]

        init(_ packs: [PackDescriptor]) {
            var holders: [Tag: [Int]] = [:]
            holders.reserveCapacity(packs.count)   // about a tag a pack in large bundles
            for (position, pack) in packs.enumerated() {
                for tag in pack.tags { holders[tag, default: []].append(position) }
            }
            self.packs = packs
            self.holders = holders
        }

        /// `ids` as listed under `tag`, each one that is the expected pack's id replaced by it.
        func shared(_ ids: [PackID], tag: Tag) -> [PackID] {
            guard let list = holders[tag] else { return ids }
            var shared = ids
            for (position, id) in ids.enumerated() where position < list.count {
                let expected = packs[list[position]].id
                if expected == id { shared[position] = expected }
            }
            return shared
        }
    }

    private static func tag(_ cursor: inout JSONCursor, ids: PackIDs) throws(Failure) -> TagDescriptor {
        var tag: Tag?, priority: Double?, packs: [PackID]?
        var seen: UInt16 = 0
        var object = try cursor.enterObject()
        while let key = try cursor.nextKey(&object) {
            switch key {
            case "tag": try once(1, key, &seen); tag = try inside(key, &cursor) { c throws(Failure) in Tag(try c.readString()) }
            case "preservationPriority":
                try once(2, key, &seen)
                priority = try inside(key, &cursor) { c throws(Failure) in try c.readNumber() }
            case "packs":
                try once(4, key, &seen)
                packs = try inside(key, &cursor) { c throws(Failure) in try array(&c) { c throws(Failure) in PackID(try c.readString()) } }
            default: try cursor.skipValue()
            }
        }
        let name = try required(tag, "tag")
        return TagDescriptor(tag: name, preservationPriority: try required(priority, "preservationPriority"),
                             packs: ids.shared(try required(packs, "packs"), tag: name))
    }

    // MARK: helpers

    /// An array whose elements `element` reads; a failure names the element's index.
    private static func array<Element>(_ cursor: inout JSONCursor,
                                       _ element: (inout JSONCursor) throws(Failure) -> Element) throws(Failure) -> [Element] {
        var elements: [Element] = []
        var array = try cursor.enterArray()
        while try cursor.nextElement(&array) {
            let position = elements.count
            do {
                elements.append(try element(&cursor))
            } catch {
                throw error.inside("[\(position)]")
            }
        }
        return elements
    }

    /// A required member's value; a failure names the member.
    private static func inside<Value>(_ key: String, _ cursor: inout JSONCursor,
                                      _ read: (inout JSONCursor) throws(Failure) -> Value) throws(Failure) -> Value {
        do {
            return try read(&cursor)
        } catch {
            throw error.inside(key)
        }
    }

    /// An optional member's value: `null` is the same as absent, as for `decodeIfPresent`.
    private static func optional<Value>(_ key: String, _ cursor: inout JSONCursor,
                                        _ read: (inout JSONCursor) throws(Failure) -> Value) throws(Failure) -> Value? {
        if cursor.readNull() { return nil }
        return try inside(key, &cursor, read)
    }

    private static func required<Value>(_ value: Value?, _ key: String) throws(Failure) -> Value {
        guard let value else { throw Failure(message: "is missing", offset: nil).inside(key) }
        return value
    }

    /// A member of an object read by the thousand (packs, frames, tags) seen once: one bit
    /// each, no allocation. Unknown members are not tracked, as `JSONDecoder` ignores them.
    private static func once(_ bit: UInt16, _ key: String, _ seen: inout UInt16) throws(Failure) {
        guard seen & bit == 0 else { throw Failure(message: "'\(key)' appears twice", offset: nil) }
        seen |= bit
    }

    private static func once(_ key: String, _ seen: inout Set<String>) throws(Failure) {
        guard seen.insert(key).inserted else { throw Failure(message: "'\(key)' appears twice", offset: nil) }
    }

    private static func int(_ cursor: inout JSONCursor) throws(Failure) -> Int {
        let position = cursor.position
        let value = try cursor.readInteger()
        guard let narrowed = Int(exactly: value) else { throw Failure(message: "an integer is out of range", offset: position) }
        return narrowed
    }

    private static func hash(_ cursor: inout JSONCursor) throws(Failure) -> ContentHash {
        let position = cursor.position
        let text = try cursor.readString()
        guard let hash = ContentHash(hex: text) else {
            throw Failure(message: "expected 64 hex digits of a SHA-256, got \"\(text.prefix(80))\"", offset: position)
        }
        return hash
    }

    /// A small value with rules of its own, decoded by its `Decodable` conformance from its bytes.
    private static func decodable<Value: Decodable>(_ type: Value.Type, _ cursor: inout JSONCursor) throws(Failure) -> Value {
        let position = cursor.position
        let raw = try cursor.rawValue()
        do {
            return try JSONDecoder().decode(type, from: Data(raw))
        } catch let error as DecodingError {
            throw Failure(message: ManifestError(decoding: error).message, offset: position)
        } catch {
            throw Failure(message: "\(error)", offset: position)
        }
    }
}

extension ManifestError {
    /// A manifest that ``ManifestReader`` could not read: `packs[3].sha256 is missing`,
    /// `packs[1].bytes: expected an integer, found a string (byte 812)`.
    init(reading failure: JSONCursor.Failure) {
        let at = failure.offset.map { " (byte \($0))" } ?? ""
        if failure.message == "is missing" {
            self.init(.syntax, "\(failure.location) is missing")
        } else if failure.path.isEmpty {
            self.init(.syntax, "not valid JSON: \(failure.message)\(at)")
        } else {
            self.init(.syntax, "\(failure.location): \(failure.message)\(at)")
        }
    }
}
