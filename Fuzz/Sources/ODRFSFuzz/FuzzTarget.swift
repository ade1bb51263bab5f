import Foundation

/// The parsers of outside input, one fuzz target each. `mount-scripts/fuzz.sh` runs every
/// case for a fixed time with its seed corpus in `Fuzz/Corpus/<rawValue>`.
///
/// A target returns normally for any input, valid or not; a trap, a sanitizer report or a
/// failed `check` (a property the parser promises, such as "what decodes re-encodes") is
/// the finding.
enum FuzzTarget: String, CaseIterable, Sendable {
    /// manifest.json: JSON decoding plus validation, then every accessor on what passed.
    case manifest
    /// The binary file index: header and record validation, then lookups over every entry.
    case fileindex
    /// IMF-fixdate parsing (If-Modified-Since, Retry-After) and formatting what was parsed.
    case httpdate
    /// Range (server), Content-Range and Retry-After (fetcher) header values.
    case headers
    /// A `multipart/byteranges` response body (several ranges in one request).
    case multipart
    /// One control-socket request line.
    case control
    /// The YAML (or JSON) tag spec, odr.yaml.
    case tagspec
    /// manifest.json.sig and the key files, and the trust check over a signature file.
    case signature
    /// A compressed pack's frame table and one frame through the zstd decoder wrapper.
    case frames
    /// An access trace (`odrfs trace` output), as `odrfs build --prefetch-from` reads it.
    case trace
    /// `/proc/self/mountinfo`, whose paths and sources any user who mounts picks.
    case mounttable
    /// Command-line values: sizes, `--expires`, `--compress`, `--metrics ADDR:PORT`.
    case options
    /// An origin or mirror URL, and a file URL built inside it from a manifest's path.
    case originurl
    /// A bundle's configuration file (`/etc/odrfs/bundles.d/NAME.conf`) and a bundle NAME.
    case bundleconf
    /// A request target sent to `odrfs serve`, checked before any file is looked up.
    case requestpath
    /// A store's `mount.json`, `references` and `store.json`, which every mount of it reads.
    case storefiles

    /// The target named by ODRFS_FUZZ_TARGET; the process exits with a usage message if none.
    static let selected: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["ODRFS_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            let names = allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("set ODRFS_FUZZ_TARGET to one of: \(names)\n".utf8))
            exit(2)
        }
        return target
    }()

    func run(_ bytes: UnsafeRawBufferPointer) {
        switch self {
        case .manifest: ManifestTarget.run(bytes)
        case .fileindex: FileIndexTarget.run(Array(bytes))
        case .httpdate: HTTPDateTarget.run(bytes)
        case .headers: HeadersTarget.run(bytes)
        case .multipart: MultipartTarget.run(bytes)
        case .control: ControlTarget.run(Data(bytes))
        case .tagspec: TagSpecTarget.run(String(decoding: bytes, as: UTF8.self))
        case .signature: SignatureTarget.run(bytes)
        case .frames: FramesTarget.run(bytes)
        case .trace: TraceTarget.run(Data(bytes))
        case .mounttable: MountTableTarget.run(bytes)
        case .options: OptionsTarget.run(String(decoding: bytes, as: UTF8.self))
        case .originurl: OriginURLTarget.run(String(decoding: bytes, as: UTF8.self))
        case .requestpath: RequestPathTarget.run(String(decoding: bytes, as: UTF8.self))
        case .bundleconf: BundleConfTarget.run(bytes)
        case .storefiles: StoreFilesTarget.run(bytes)
        }
    }
}

/// A property of a parser that must hold for every input; a violation is a finding, so it
/// traps with a message libFuzzer shows next to the crashing input.
func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("property violated: \(message())") }
}
