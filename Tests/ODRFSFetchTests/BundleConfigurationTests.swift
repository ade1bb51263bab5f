import Foundation
import ODRFSCore
import Testing
import TestSupport
@testable import ODRFSFetch

/// `/etc/odrfs/bundles.d/NAME.conf` (issue 25): the parser of an outside file a root
/// automounter reads, and the bundle names paths are built from.
@Suite struct BundleConfigurationTests {
    func parse(_ text: String) throws(BundleConfigurationError) -> BundleConfiguration {
        try BundleConfiguration(parsing: Array(text.utf8))
    }

    func refusal(_ text: String) -> BundleConfigurationError? {
        do {
            _ = try parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func everyKeyParsesAndBecomesMountArguments() throws {
        let configuration = try parse("""
            # travel guide
              origin = https://cdn.example.com/travel?k=v\r
            mirrors = https://a.example.com/travel\thttps://b.example.com/travel,token-file=/etc/odrfs/b.token
            token-file = /etc/odrfs/travel.token
            ca-file = /etc/odrfs/ca.pem
            trust-key = /etc/odrfs/old.pub /etc/odrfs/new.pub

            cache = /var/cache/odrfs/travel
            cache-size = 2G
            min-free = 512M
            max-in-use = 1G
            fetch-timeout = 12.5
            max-background-rate = 2M
            proxy = http://squid.example.com:3128
            offline = yes
            log-level = debug
            variants = tcf=astc,etc2 locale=it
            """)
        #expect(configuration.origin == "https://cdn.example.com/travel?k=v")
        #expect(configuration.mirrors == [MirrorOption(url: "https://a.example.com/travel"),
                                          MirrorOption(url: "https://b.example.com/travel", tokenFile: "/etc/odrfs/b.token")])
        #expect(configuration.trustKeys == ["/etc/odrfs/old.pub", "/etc/odrfs/new.pub"])
        #expect(configuration.cacheSize == .gibibytes(2) && configuration.minFree == .mebibytes(512))
        #expect(configuration.mountArguments == [
            "https://cdn.example.com/travel?k=v",
            "--mirror", "https://a.example.com/travel",
            "--mirror", "https://b.example.com/travel,token-file=/etc/odrfs/b.token",
            "--token-file", "/etc/odrfs/travel.token", "--ca-file", "/etc/odrfs/ca.pem",
            "--trust-key", "/etc/odrfs/old.pub", "--trust-key", "/etc/odrfs/new.pub",
            "--cache", "/var/cache/odrfs/travel", "--cache-size", "2147483648", "--min-free", "536870912",
            "--max-in-use", "1073741824", "--fetch-timeout", "12.5", "--max-background-rate", "2097152",
            "--proxy", "http://squid.example.com:3128", "--offline", "--log-level", "debug",
            "--variant", "tcf=astc,etc2", "--variant", "locale=it",
        ])
        #expect(try parse("origin = /srv/dist").mountArguments == ["/srv/dist"])
        #expect(try parse("origin=file:///srv/dist\n").origin == "file:///srv/dist")
    }

    @Test func refusalsNameTheLineAndTheProblem() {
        #expect(refusal("origin = http://a/\norgin = x")?.description == "line 2: unknown key 'orgin' (known: \(BundleConfiguration.Key.allCases.map(\.rawValue).joined(separator: ", ")))")
        #expect(refusal("origin = http://a/\n\norigin = http://b/")?.description == "line 3: origin is already set on line 1")
        #expect(refusal("cache-size = 1G")?.description == "no origin (add a line 'origin = https://…' or 'origin = /path/to/dist')")
        #expect(refusal("origin http://a/")?.line == 1)
        #expect(refusal("origin =")?.description == "line 1: origin has no value")
        #expect(refusal("origin = https://user:pw@a/")?.message.contains("credentials") == true)
        #expect(refusal("origin = http://a:99999/")?.message.contains("port") == true)
        #expect(refusal("origin = dist")?.description == "line 1: origin must be an absolute path")
        #expect(refusal("origin = ftp://a/")?.line == 1)
        #expect(refusal("origin = /d\nmirrors = /srv/other")?.message.contains("http(s)") == true)
        #expect(refusal("origin = /d\nmirrors = http://m/,token-file=relative")?.line == 2)
        #expect(refusal("origin = /d\ntoken-file = token")?.line == 2)
        #expect(refusal("origin = /d\ncache-size = lots")?.line == 2)
        #expect(refusal("origin = /d\nmax-background-rate = 10")?.line == 2)
        #expect(refusal("origin = /d\nfetch-timeout = nan")?.line == 2)
        #expect(refusal("origin = /d\nfetch-timeout = 0")?.line == 2)
        #expect(refusal("origin = /d\noffline = maybe")?.line == 2)
        #expect(refusal("origin = /d\nlog-level = loud")?.line == 2)
        #expect(refusal("origin = /d\nproxy = socks5://p:1080")?.line == 2)
        #expect(refusal("origin = /d\nvariants = tcf")?.line == 2)
        #expect(refusal("origin = /d\nvariants = tcf=astc tcf=bc7")?.message.contains("twice") == true)
        #expect(refusal("origin = /d\nvariants = TCF=astc")?.line == 2)
        #expect(refusal("origin = /d\nmirrors = " + Array(repeating: "http://m/", count: 16).joined(separator: " "))?.line == 2)
        #expect(refusal("origin = /d\ntrust-key = " + Array(repeating: "/k", count: 9).joined(separator: " "))?.line == 2)
    }

    @Test func theFileIsBounded() {
        #expect(refusal("origin = /d\n# " + String(repeating: "x", count: 5000))?.description == "line 2: longer than 4096 bytes")
        let big = "origin = /d\n" + String(repeating: "#\n", count: 40_000)
        #expect(refusal(big)?.description == "the file is larger than 65536 bytes")
        #expect(refusal("origin = /d\u{0}")?.description == "line 1: contains a control character")
        #expect(refusal("origin = /d\u{1B}[31m")?.line == 1)
        #expect((try? BundleConfiguration(parsing: [0x6F, 0xFF, 0xFE])) == nil)
        #expect(refusal("origin = /" + String(repeating: "p", count: 4095))?.line == 1)
    }

    // Found by the bundleconf fuzz target: URLComponents accepts a tab inside an origin
    // URL, and a tab is a control character no mount argument should carry.
    @Test func aTabInsideAValueIsRefused() throws {
        #expect(refusal("origin = https://cdtrust-keyog-leveletps://cdtrust-keyog-levetam\traole.com/t?k=v")?.description
            == "line 1: origin contains a tab")
        #expect(refusal("origin = /d\ncache = /var/cache/a\tb")?.description == "line 2: cache contains a tab")
        #expect(try parse("origin = /d\ntrust-key = /k1\t/k2").trustKeys == ["/k1", "/k2"])
    }

    @Test func bundleNamesBuildNoPathOutsideTheFolder() {
        for good in ["travel", "travel-guide", "a", "Game_2.v3", String(repeating: "n", count: 64)] {
            #expect(BundleName(good)?.rawValue == good, "\(good)")
        }
        for bad in ["", ".", "..", ".hidden", "a/b", "../etc", "a..b", "-rf", "_x", "a b", "naïve", "a\u{0}b", "x\n",
                    String(repeating: "n", count: 65), "a:b", "a*"] {
            #expect(BundleName(bad) == nil, "\(bad.debugDescription)")
        }
        #expect(BundleDirectory(path: "/etc/odrfs/bundles.d").configurationPath(for: BundleName("travel")!)
            == "/etc/odrfs/bundles.d/travel.conf")
        #expect(BundleDirectory(environment: [:]).path == "/etc/odrfs/bundles.d")
        #expect(BundleDirectory(environment: ["ODRFS_BUNDLES_DIR": "/tmp/b"]).path == "/tmp/b")
        #expect(BundleDirectory(environment: ["ODRFS_BUNDLES_DIR": "relative"]).path == "/etc/odrfs/bundles.d")
    }

    @Test func loadingRefusesLinksAndOtherFiles() throws {
        let folder = try TemporaryDirectory()
        let directory = BundleDirectory(path: folder.path)
        try "origin = /srv/dist\n".write(toFile: folder.path + "/good.conf", atomically: true, encoding: .utf8)
        #expect(try directory.load(BundleName("good")!).origin == "/srv/dist")
        symlink(folder.path + "/good.conf", folder.path + "/link.conf")
        mkfifo(folder.path + "/fifo.conf", 0o644)
        mkdir(folder.path + "/dir.conf", 0o755)
        try "origin = /srv/dist\n".write(toFile: folder.path + "/open.conf", atomically: true, encoding: .utf8)
        chmod(folder.path + "/open.conf", 0o666)
        for name in ["link", "fifo", "dir"] + (geteuid() == 0 ? ["open"] : []) {
            if case .unreadable = loadFailure(directory, name) {} else {
                Issue.record("\(name).conf was not refused as unreadable: \(String(describing: loadFailure(directory, name)))")
            }
        }
        if case .notConfigured = loadFailure(directory, "absent") {} else {
            Issue.record("a missing file is not 'not configured'")
        }
    }

    func loadFailure(_ directory: BundleDirectory, _ name: String) -> BundleDirectory.LoadError? {
        do {
            _ = try directory.load(BundleName(name)!)
            return nil
        } catch {
            return error
        }
    }
}
