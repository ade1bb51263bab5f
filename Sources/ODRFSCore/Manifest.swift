import Crypto
import Foundation

/// The root of a dist dir: the small, human-readable `manifest.json` that names the bundle
/// version, every pack (id, tags, file, size, hashes), the categories and priorities, and the
/// file index. Everything else in the dist dir is content addressed and found through it.
///
/// ``decode(_:)`` validates the whole document so that the mount can trust it afterwards,
/// including the bounds of ``BundleLimits`` (total and pack size ≤ 2^52 bytes, chunk size
/// 1 KiB…1 GiB, at most 1,000,000 packs, index ≤ 1 GiB, pack hashes unique);
/// ``encoded()`` is deterministic so that the same bundle yields the same bytes.
public struct Manifest: Codable, Sendable, Equatable {
    public static let currentFormat = 1
    public static let fileName = "manifest.json"
    /// The largest `manifest.json` ODRFS reads anywhere (a mount, a store, a rebuild): a bound
    /// against a hostile origin that still takes what `odrfs build` writes for 300,000 packs
    /// (about 820 bytes each; issue 28's 100,000-pack bundle is 82 MB).
    public static let maximumBytes = ByteCount(256 << 20)
    /// Chunk size used by `odrfs build`.
    public static let defaultChunkSize = ByteCount.mebibytes(1)

    public var format: Int
    /// SHA-256 over the index hash and every pack's id and hash (see ``computeBundleVersion(index:packs:)``):
    /// identifies the immutable bundle version.
    public var bundleVersion: ContentHash
    public var chunkSize: ByteCount
    public var index: IndexReference
    /// `packs[0]` is always the base pack (id "base", no tags, possibly no files); the rest sorted by id.
    public var packs: [PackDescriptor]
    /// Sorted by tag.
    public var tags: [TagDescriptor]
    /// Tags made local before the mount reports ready.
    public var initialInstall: [Tag]
    /// Tags downloaded right after, in this order.
    public var prefetch: [Tag]
    /// Increases by one at each `odrfs build` into an existing dist dir (1 for a fresh one), so
    /// that a mount with `--trust-key` can refuse an older manifest (a rollback). Within
    /// ``BundleLimits/revisionRange``. A manifest written before revisions existed has no
    /// `revision` key and decodes as revision ``unrevisioned`` (1).
    public var revision: Int64
    /// When the manifest stops being valid, in Unix seconds (UTC), from
    /// `odrfs build --expires`; absent means never. A mount with `--trust-key` refuses an
    /// expired manifest. Within ``BundleLimits/expiryRange``.
    public var expires: Int64?
    /// Other servers holding this same dist dir (base URLs, http or https), which a mount
    /// may fetch from besides its origin. Absent in most manifests. At most
    /// ``maximumMirrors``, each an http(s) URL of at most ``maximumMirrorURLBytes`` bytes of
    /// printable ASCII.
    public var mirrors: [String]?
    /// The variant keys of the bundle with their values, defaults and rules, in declared
    /// order (see ``VariantDeclaration``); absent when the bundle has none. At most
    /// ``VariantDeclaration/maximumKeys``.
    public var variants: [VariantDeclaration]?
    /// The bundle's identity ("com.example.Game"; see ``BundleIdentity``), the same for every
    /// revision and origin of the bundle. Absent in manifests built before identities existed.
    public var bundle: BundleIdentity?

    /// Bounds on ``mirrors``: the manifest is hostile input.
    public static let maximumMirrors = 16
    public static let maximumMirrorURLBytes = 2048

    /// The revision of a manifest that has no `revision` key (built before revisions
    /// existed): the first revision, so that the next build into its dist dir makes 2.
    public static let unrevisioned: Int64 = 1

    public init(format: Int = Manifest.currentFormat, bundleVersion: ContentHash, chunkSize: ByteCount,
                index: IndexReference, packs: [PackDescriptor], tags: [TagDescriptor],
                initialInstall: [Tag], prefetch: [Tag], revision: Int64 = Manifest.unrevisioned, expires: Int64? = nil) {
        self.format = format
        self.bundleVersion = bundleVersion
        self.chunkSize = chunkSize
        self.index = index
        self.packs = packs
        self.tags = tags
        self.initialInstall = initialInstall
        self.prefetch = prefetch
        self.revision = revision
        self.expires = expires
    }

    /// Decodes every key as synthesized, except that `revision` may be absent (older
    /// manifests; see ``unrevisioned``).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        format = try container.decode(Int.self, forKey: .format)
        bundleVersion = try container.decode(ContentHash.self, forKey: .bundleVersion)
        chunkSize = try container.decode(ByteCount.self, forKey: .chunkSize)
        index = try container.decode(IndexReference.self, forKey: .index)
        packs = try container.decode([PackDescriptor].self, forKey: .packs)
        tags = try container.decode([TagDescriptor].self, forKey: .tags)
        initialInstall = try container.decode([Tag].self, forKey: .initialInstall)
        prefetch = try container.decode([Tag].self, forKey: .prefetch)
        revision = try container.decodeIfPresent(Int64.self, forKey: .revision) ?? Self.unrevisioned
        expires = try container.decodeIfPresent(Int64.self, forKey: .expires)
        mirrors = try container.decodeIfPresent([String].self, forKey: .mirrors)
        variants = try container.decodeIfPresent([VariantDeclaration].self, forKey: .variants)
        bundle = try container.decodeIfPresent(BundleIdentity.self, forKey: .bundle)
    }

    /// The bundle version of a bundle with this index and these packs. Pack ids take part so that
    /// two bundles whose packs hold the same bytes under different tag sets differ.
    ///
    /// `variants` take part when present (a new default or rule changes what mounts serve
    /// from the same packs); without them the version is what it always was.
    public static func computeBundleVersion(index: ContentHash, packs: [PackDescriptor],
                                            variants: [VariantDeclaration]? = nil) -> ContentHash {
        // The lines are hashed as they are made (100,000 packs make 10 MB of them); the bytes
        // are what one string of them all would be.
        var hasher = SHA256()
        func add(_ line: String) {
            var line = line
            line.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        }
        add("odrfs-bundle-v1\nindex \(index.hex)\n")
        for pack in packs {
            add("pack \(pack.id.rawValue) \(pack.sha256.hex)\n")
        }
        var text = ""
        for declaration in variants ?? [] {
            text += "variant \(declaration.key) \(declaration.values.map(\.name).joined(separator: ",")) default \(declaration.defaultValue)"
            for rule in declaration.rules {
                text += " rule \(rule.value) \(rule.minimumMemory.map { String($0.value) } ?? "-") \(rule.minimumCPUs.map(String.init) ?? "-")"
            }
            text += "\n"
        }
        add(text)
        return ContentHash(digest: hasher.finalize())
    }

    /// Parses and validates a manifest; every problem is reported with what and where.
    /// Reads with ``ManifestReader`` (a manifest may name 100,000 packs); the result is what
    /// the `Decodable` conformance gives (``decodeWithFoundation(_:)``).
    public static func decode(_ data: Data) throws(ManifestError) -> Manifest {
        let manifest = try ManifestReader.read(data)
        try manifest.validate()
        return manifest
    }

    /// ``decode(_:)`` through `JSONDecoder` and the `Decodable` conformances: what
    /// ``ManifestReader`` must agree with, for tests and the fuzz target.
    public static func decodeWithFoundation(_ data: Data) throws(ManifestError) -> Manifest {
        let manifest: Manifest
        do {
            manifest = try JSONDecoder().decode(Manifest.self, from: data)
        } catch let error as DecodingError {
            throw ManifestError(decoding: error)
        } catch {
            throw ManifestError(.syntax, "not valid JSON: \(error)")
        }
        try manifest.validate()
        return manifest
    }

    /// Deterministic JSON: sorted keys, pretty printed, slashes unescaped.
    public func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Every field is a plain value type whose encoding cannot fail.
        // swiftlint:disable:next force_try
        var data = try! encoder.encode(self)
        data.append(UInt8(ascii: "\n"))
        return data
    }

    /// The pack at `number`; traps when out of range, like an array subscript. Pack numbers
    /// from a ``FileIndex`` checked with ``FileIndex/validate(against:)`` and from
    /// ``packs(for:)`` or ``packNumber(of:)`` are always in range; for any other number use
    /// ``packIfPresent(_:)``.
    public func pack(_ number: PackNumber) -> PackDescriptor {
        packs[Int(number.rawValue)]
    }

    /// The pack at `number`, or nil when the manifest has no such pack.
    public func packIfPresent(_ number: PackNumber) -> PackDescriptor? {
        Int(number.rawValue) < packs.count ? packs[Int(number.rawValue)] : nil
    }

    /// The size of all packs together. At most ``BundleLimits/maxTotalBytes`` for a decoded
    /// (validated) manifest, so sums of any of its packs' sizes never overflow. Saturates
    /// instead of trapping for a manifest built in memory with absurd sizes.
    public var totalBytes: ByteCount {
        var total: Int64 = 0
        for pack in packs {
            let (sum, overflow) = total.addingReportingOverflow(max(pack.bytes.value, 0))
            total = overflow ? .max : sum
        }
        return ByteCount(total)
    }

    public func packNumber(of id: PackID) -> PackNumber? {
        packs.firstIndex { $0.id == id }.map { PackNumber(UInt32($0)) }
    }

    /// Whether the pack holds untagged files: the base pack, and with variants the base's
    /// variants (`base[locale=it]`). These are always local and never purged.
    public func isBase(_ number: PackNumber) -> Bool {
        number == .base || packIfPresent(number)?.tags.isEmpty == true
    }

    /// The base pack and its variants, base first.
    public var basePacks: [PackNumber] {
        packs.indices.filter { $0 == 0 || packs[$0].tags.isEmpty }.map { PackNumber(UInt32($0)) }
    }

    /// Every pack whose tag set contains `tag`, in manifest order.
    public func packs(for tag: Tag) -> [PackNumber] {
        packs.indices.filter { packs[$0].tags.contains(tag) }.map { PackNumber(UInt32($0)) }
    }

    /// The declared variant keys; empty when the bundle has none.
    public var variantDeclarations: [VariantDeclaration] { variants ?? [] }

    /// The tag's preservation priority, 0 when the tag is unknown.
    public func preservationPriority(of tag: Tag) -> Double {
        tags.first { $0.tag == tag }?.preservationPriority ?? 0
    }
}
