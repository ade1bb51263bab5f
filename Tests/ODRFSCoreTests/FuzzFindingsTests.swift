import Foundation
import Testing
import ODRFSCore

/// Inputs the fuzz targets in Fuzz/ made crash, kept as regression tests. Each runs in a
/// child process (an exit test), so an input that still traps fails its own test instead of
/// killing the whole test run.
@Suite struct FuzzFindingsTests {
    /// Fuzz target `httpdate` (and the seed of issue 12): `year - 1900` trapped on the
    /// smallest Int32 year, so one If-Modified-Since header killed `odrfs serve` and one
    /// Retry-After killed a mount. Fixed on branch hostile-inputs (HTTPDate years 1...9999).
    @Test func httpDateWithYearInt32MinDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            _ = HTTPDate.parse("Sun, 06 Nov -2147483648 08:49:37 GMT")
        }
    }

    /// Fuzz target `manifest` (seed Fuzz/Corpus/manifest/pack-bytes-int64-max.json, the
    /// travel-guide-like tiny manifest with the base pack's size set to Int64.max):
    /// `bytes + chunkSize - 1` trapped in validation, so one manifest from an origin killed
    /// the mount. Fixed on branch hostile-inputs (BundleLimits bound pack sizes).
    @Test func manifestWithPackBytesInt64MaxDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            #expect(throws: ManifestError.self) { try Manifest.decode(Data(FuzzFindingsTests.packBytesInt64Max.utf8)) }
        }
    }

    /// Fuzz target `httpdate` (crash input Fuzz/Corpus/httpdate/leap-second-9999): a leap
    /// second on the last day an IMF-fixdate can hold normalised into year 10000, which
    /// `format` clamps, so the date did not survive a round trip. Such a date is now nil.
    @Test func leapSecondPastTheLastRepresentableDayIsNotADate() {
        #expect(HTTPDate.parse("Fri, 31 Dec 9999 23:59:60 GMT") == nil)
        #expect(HTTPDate.parse("Fri, 31 Dec 9999 23:59:59 GMT") == 253_402_300_799)
        let leap = HTTPDate.parse("Sat, 31 Dec 2016 23:59:60 GMT")
        #expect(leap == HTTPDate.parse("Sun, 01 Jan 2017 00:00:00 GMT"), "an ordinary leap second still parses")
    }

    static let packBytesInt64Max = #"""
{"bundleVersion":"297fa9df6070bb92ec50d30e366146d4efd01fde0a665b16f22722f8813d15d0","chunkSize":1048576,"format":1,"index":{"bytes":335,"entries":4,"file":"index/03ece9a147dc48ec84dfdbccd08ff24709c8553dcc1ff2a41d158b04a826e0b8.odrx","sha256":"03ece9a147dc48ec84dfdbccd08ff24709c8553dcc1ff2a41d158b04a826e0b8"},"initialInstall":[],"packs":[{"bytes":9223372036854775807,"chunks":["5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef"],"file":"packs/5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef.tar","files":0,"id":"base","sha256":"5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef","tags":[]},{"bytes":2048,"chunks":["2c032ddac9e19ea9c04b17e5c47592df9d3e574e23001f1d0024d426da109dfa"],"file":"packs/2c032ddac9e19ea9c04b17e5c47592df9d3e574e23001f1d0024d426da109dfa.tar","files":1,"id":"A","sha256":"2c032ddac9e19ea9c04b17e5c47592df9d3e574e23001f1d0024d426da109dfa","tags":["A"]}],"prefetch":[],"tags":[{"packs":["A"],"preservationPriority":0,"tag":"A"}]}
"""#
}
