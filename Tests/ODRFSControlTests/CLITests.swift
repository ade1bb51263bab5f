import ControlTestSupport
import Foundation
import ODRFSControl
import Testing
import TestSupport

/// The `odrfs` control commands against the fake service (the lead's mount tests cover real mounts).
@Suite(.timingSensitive, .timeLimit(.minutes(1))) struct CLITests {
    /// The built `odrfs` executable, next to this test bundle.
    static let odrfs: String = {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return ((executable as NSString).deletingLastPathComponent as NSString).appendingPathComponent("odrfs")
    }()

    func run(_ arguments: [String], output: TemporaryDirectory) async throws -> (status: Int32?, out: String, err: String) {
        let child = try ChildProcess(Self.odrfs, arguments, stdout: output.path + "/out", stderr: output.path + "/err")
        if !(await exited(child, within: .seconds(20))) { child.stop() }
        let out = (try? String(contentsOfFile: output.path + "/out", encoding: .utf8)) ?? ""
        let err = (try? String(contentsOfFile: output.path + "/err", encoding: .utf8)) ?? ""
        return (child.terminationStatus, out, err)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: odrfs)))
    func commandsAndExitCodes() async throws {
        let fixture = try ControlFixture()
        let output = try TemporaryDirectory()
        let mountpoint = fixture.mountpoint

        var result = try await run(["request", mountpoint, "Rome", "--conditional"], output: output)
        #expect(result.status == 3, "\(result.err)")
        result = try await run(["request", mountpoint, "Nowhere"], output: output)
        #expect(result.status == 4)
        #expect(result.err.contains("unknown tag 'Nowhere'"))
        result = try await run(["request", mountpoint, "Rome", "--priority", "urgent"], output: output)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.contains("progress 100%"))
        #expect(await eventually { fixture.service.totalRetains == 0 })   // retains end with the command

        result = try await run(["priority", mountpoint, "Italy", "--set", "0.7"], output: output)
        #expect(result.status == 0 && result.out.contains("0.70"))
        result = try await run(["status", mountpoint, "--json"], output: output)
        let snapshot = try ControlProtocol.makeDecoder().decode(StatusSnapshot.self, from: Data(result.out.utf8))
        #expect(snapshot.tags.first { $0.tag == "Italy" }?.preservationPriority == 0.7)
        result = try await run(["status", mountpoint], output: output)
        #expect(result.out.contains("TAG") && result.out.contains("PACK") && result.out.contains("total:"))

        // --hold keeps the retains until SIGTERM.
        let hold = try ChildProcess(Self.odrfs, ["request", mountpoint, "Iceland", "--hold"], stdout: output.path + "/hold")
        #expect(await eventually { fixture.service.retains("Iceland") == 1 })
        result = try await run(["purge", mountpoint, "--all"], output: output)
        #expect(result.out.contains("evicted Rome") && result.out.contains("kept Iceland (in use)"))
        hold.signal(SIGTERM)
        #expect(await exited(hold, within: .seconds(10)))
        #expect(hold.terminationStatus == 0)
        #expect(fixture.service.totalRetains == 0)
        await fixture.stop()
    }
}
