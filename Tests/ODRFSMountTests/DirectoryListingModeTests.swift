import FUSEKit
@testable import ODRFSMount
import Testing

/// Readdir or readdirplus (issue 28): the connection flags each mode asks for, which
/// entries a readdirplus reply links, the environment override, and the default.
@Suite("Directory listing mode")
struct DirectoryListingModeTests {
    @Test("each mode asks the kernel for its flags")
    func flags() {
        let expected: [DirectoryListingMode: (plus: Bool, auto: Bool)] = [
            .always: (true, false), .never: (false, false), .auto: (true, true), .directories: (true, false), .adaptive: (true, false),
        ]
        for mode in DirectoryListingMode.allCases {
            var connection = ConnectionConfiguration()
            connection.readdirPlus = !(expected[mode]?.plus ?? true)  // the opposite, to see it set
            connection.readdirPlusAuto = !(expected[mode]?.auto ?? true)
            mode.apply(to: &connection)
            #expect(connection.readdirPlus == expected[mode]?.plus, "\(mode)")
            #expect(connection.readdirPlusAuto == expected[mode]?.auto, "\(mode)")
        }
    }

    @Test("fixed modes: files linked except with `directories`")
    func fixedModes() {
        for mode in [DirectoryListingMode.always, .never, .auto] {
            let policy = DirectoryListingPolicy(mode: mode, linkBudget: 0)
            policy.replied(files: 10_000, linked: false)
            #expect(policy.linksFiles(startsListing: true), "\(mode)")
        }
        #expect(!DirectoryListingPolicy(mode: .directories).linksFiles(startsListing: true))
    }

    /// The default (issue 28): a walk past the budget that never stats (find) gets
    /// name-only files; one that stats what it lists (ls -lR, du) gets them linked, with
    /// a name-only probe every 16 replies that turns linking off when the stats stop.
    @Test("adaptive: linked within the budget, then only while lookups follow the listings")
    func adaptive() {
        #expect(DirectoryListingMode.default == .adaptive)
        let policy = DirectoryListingPolicy(mode: .adaptive, linkBudget: 300)
        for _ in 0..<3 {
            #expect(policy.linksFiles(startsListing: true), "within the budget")
            policy.replied(files: 100, linked: true)
        }
        // Past the budget, a find: nothing looked up.
        #expect(!policy.linksFiles(startsListing: true))
        policy.replied(files: 100, linked: false)
        #expect(!policy.linksFiles(startsListing: true), "no stats followed")
        // An ls -lR: every file of the next name-only directory is looked up.
        policy.replied(files: 100, linked: false)
        for _ in 0..<100 { policy.lookedUpFile() }
        var decisions = (0..<32).map { _ in policy.linksFiles(startsListing: true) }
        #expect(decisions.filter { $0 }.count == 30, "linked but for one probe in 16 listings: \(decisions)")
        // A listing's later replies (the empty one that ends it, most often) are no probes.
        decisions = (0..<32).map { _ in policy.linksFiles(startsListing: false) }
        #expect(decisions.allSatisfy { $0 }, "\(decisions)")
        // The stats stop (a find again): the probes' files go unlooked-up and linking ends.
        for _ in 0..<4 { policy.replied(files: 100, linked: false) }
        decisions = (0..<32).map { _ in policy.linksFiles(startsListing: true) }
        #expect(decisions.allSatisfy { !$0 }, "\(decisions)")
    }

    @Test("adaptive: the evidence decays, so an ls -lR after a long find links within a few directories")
    func evidenceDecays() {
        let policy = DirectoryListingPolicy(mode: .adaptive, linkBudget: 0)
        for _ in 0..<1000 { policy.replied(files: 100, linked: false) }   // a 100,000-file find
        #expect(!policy.linksFiles(startsListing: true))
        policy.replied(files: 100, linked: false)
        for _ in 0..<2100 { policy.lookedUpFile() }   // 21 directories of an ls -lR
        #expect(policy.linksFiles(startsListing: true), "without decay, 25,000 lookups would be needed")
    }

    @Test("ODRFS_READDIRPLUS names a mode; anything else is the default")
    func environment() {
        let key = DirectoryListingMode.environmentVariable
        #expect(key == "ODRFS_READDIRPLUS")
        #expect(DirectoryListingMode(environment: [key: "never"]) == .never)
        #expect(DirectoryListingMode(environment: [key: "AUTO"]) == .auto)
        #expect(DirectoryListingMode(environment: [key: "directories"]) == .directories)
        #expect(DirectoryListingMode(environment: [key: "always"]) == .always)
        #expect(DirectoryListingMode(environment: [key: "sometimes"]) == .default)
        #expect(DirectoryListingMode(environment: [:]) == .default)
    }
}
