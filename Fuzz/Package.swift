// swift-tools-version: 6.1
// libFuzzer targets for ODRFS's parsers of outside input. A package of its own, built only by
// mount-scripts/fuzz.sh with `-sanitize=fuzzer,address` in Fuzz/.build, so that the main
// build and its tests never see the sanitizer flags.
//
// One binary, `odrfs-fuzz`, holds every target; ODRFS_FUZZ_TARGET picks one (see FuzzTarget).
// The HTTP header parsers are internal to ODRFSFetch and ODRFSServer: their source files are
// symlinked into this module (Sources/ODRFSFuzz/Parsers) so the exact code is fuzzed without
// making it public.
import PackageDescription

let package = Package(
    name: "odrfs-fuzz",
    dependencies: [
        .package(name: "odrfs", path: ".."),
    ],
    targets: [
        // The declaration of libFuzzer's driver entry point (the library comes with -sanitize=fuzzer).
        .target(name: "CLibFuzzer"),
        .executableTarget(
            name: "odrfs-fuzz",
            dependencies: [
                "CLibFuzzer",
                .product(name: "ODRFSCore", package: "odrfs"),
                .product(name: "ODRFSControl", package: "odrfs"),
                .product(name: "ODRFSBuild", package: "odrfs"),
                .product(name: "ODRFSCompression", package: "odrfs"),
            ],
            path: "Sources/ODRFSFuzz"
        ),
    ],
    swiftLanguageModes: [.v6]
)
