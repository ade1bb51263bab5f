import Foundation
import ODRFSCore
import TestSupport
import Testing

/// `odrfs probe` against real servers on 127.0.0.1: its JSON contract and exit codes.
@Suite("odrfs probe", .serialized, .timingSensitive, .enabled(if: FUSEAvailability.shouldRun), .timeLimit(.minutes(2)))
struct ProbeCommandTests {
    func probe(_ fixture: MountFixture, _ arguments: [String]) async throws -> (status: Int32, json: [String: Any]?, result: CommandResult) {
        let result = try await fixture.odrfs(["probe"] + arguments)
        let json = try? JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        return (result.status, json, result)
    }

    @Test("a good origin: exit 0, mountable, its revision, RTT and status 200")
    func goodOrigin() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let nginx = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0) }
        let (status, json, result) = try await probe(fixture, [nginx.url, "--json"])
        #expect(status == 0, "\(result.output) \(result.stderr)")
        let object = try #require(json)
        #expect(object["mountable"] as? Bool == true)
        #expect(object["revision"] as? Int == 1)
        #expect(object["signature"] as? String == "not-checked")
        let mirror = try #require((object["mirrors"] as? [[String: Any]])?.first)
        #expect(mirror["url"] as? String == String(nginx.url.dropLast()))
        #expect(mirror["reachable"] as? Bool == true && mirror["http_status"] as? Int == 200)
        #expect(mirror["rtt_ms"] is Double)
        #expect(mirror.keys.contains("error") && mirror["error"] is NSNull)
        let text = try await fixture.odrfs(["probe", nginx.url])
        #expect(text.status == 0 && text.output.contains("mountable: yes"), "\(text.output)")
    }

    @Test("an origin that wants a token: exit 1, HTTP 401, and the message names --token-file")
    func unauthorized() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        let tokenFile = fixture.root + "/token"
        try "secret\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let server = try await onFreePort { try await ServeOrigin(serving: fixture.dist, in: fixture.root + "/serve-\($0)", port: $0, tokenFile: tokenFile) }
        let (status, json, _) = try await probe(fixture, [server.url, "--json"])
        #expect(status == 1)
        let mirror = try #require((json?["mirrors"] as? [[String: Any]])?.first)
        #expect(mirror["http_status"] as? Int == 401 && mirror["reachable"] as? Bool == true)
        #expect((mirror["error"] as? String)?.contains("--token-file") == true)
        #expect(json?["mountable"] as? Bool == false)
        let good = try await probe(fixture, [server.url, "--json", "--token-file", tokenFile])
        #expect(good.status == 0 && good.json?["mountable"] as? Bool == true)
    }

    @Test("a corrupt manifest: exit 1 and the reason")
    func corruptManifest() async throws {
        let fixture = try MountFixture()
        try await fixture.buildTestBundle()
        try Data("{\"format\": 1, \"packs\": [".utf8).write(to: URL(fileURLWithPath: fixture.dist + "/manifest.json"))
        let nginx = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0) }
        let (status, json, _) = try await probe(fixture, [nginx.url, "--json"])
        #expect(status == 1)
        #expect(json?["mountable"] as? Bool == false)
        let mirror = try #require((json?["mirrors"] as? [[String: Any]])?.first)
        #expect((mirror["error"] as? String)?.contains("invalid manifest") == true, "\(mirror)")
        let text = try await fixture.odrfs(["probe", nginx.url])
        #expect(text.status == 1 && text.output.contains("mountable: no") && text.output.contains("invalid manifest"), "\(text.output)")
    }

    @Test("a dead host: exit 1 within seconds, unreachable; bad arguments: exit 2")
    func deadHostAndBadArguments() async throws {
        let fixture = try MountFixture()
        let started = ContinuousClock.now
        let (status, json, _) = try await probe(fixture, ["http://127.0.0.1:\(try unusedLoopbackPort())/", "--json"])
        #expect(status == 1)
        #expect(ContinuousClock.now - started < .seconds(10))
        let mirror = try #require((json?["mirrors"] as? [[String: Any]])?.first)
        #expect(mirror["reachable"] as? Bool == false && mirror["http_status"] is NSNull)
        #expect(json?["revision"] is NSNull)
        #expect(try await fixture.odrfs(["probe"]).status == 2)
        #expect(try await fixture.odrfs(["probe", "http://127.0.0.1:1/", "--timeout", "-1"]).status == 2)
        #expect(try await fixture.odrfs(["probe", "http://127.0.0.1:1/", "--bogus"]).status == 2)
    }

    @Test("with --trust-key: a signed manifest is valid, an unsigned one unsigned, another key's invalid")
    func signatures() async throws {
        let fixture = try MountFixture()
        try TestBundle.write(to: fixture.source)
        for name in ["key", "other"] {
            #expect(try await fixture.odrfs(["keygen", fixture.root + "/" + name]).status == 0)
        }
        #expect(try await fixture.odrfs(["build", fixture.source, "-o", fixture.dist, "--sign-key", fixture.root + "/key"]).status == 0)
        let nginx = try await onFreePort { try await NginxOrigin(serving: fixture.dist, in: fixture.root + "/nginx-\($0)", port: $0) }
        let valid = try await probe(fixture, [nginx.url, "--json", "--trust-key", fixture.root + "/key.pub"])
        #expect(valid.status == 0 && valid.json?["signature"] as? String == "valid", "\(valid.result.output)")
        let wrongKey = try await probe(fixture, [nginx.url, "--json", "--trust-key", fixture.root + "/other.pub"])
        #expect(wrongKey.status == 1 && wrongKey.json?["signature"] as? String == "invalid")
        try FileManager.default.removeItem(atPath: fixture.dist + "/manifest.json.sig")
        let unsigned = try await probe(fixture, [nginx.url, "--json", "--trust-key", fixture.root + "/key.pub"])
        #expect(unsigned.status == 1 && unsigned.json?["signature"] as? String == "unsigned")
        #expect(try await fixture.odrfs(["probe", nginx.url, "--trust-key", fixture.root + "/missing.pub"]).status == 2)
    }
}
