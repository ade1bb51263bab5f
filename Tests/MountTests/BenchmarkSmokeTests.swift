import Foundation
import TestSupport
import Testing

/// Keeps `Benchmarks/run.sh` from rotting: the whole benchmark on its tiny dataset,
/// against the odrfs binary this test run built (no release build, no timing asserted).
@Suite(.serialized, .disturbsTheMachine, .enabled(if: FUSEAvailability.shouldRun))
struct BenchmarkSmokeTests {
    /// The repository root, from this file's path (Tests/MountTests/<this file>).
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    @Test(.timeLimit(.minutes(3)))
    func quickRunPrintsEveryWorkload() async throws {
        let output = NSTemporaryDirectory() + "/odrfs-bench-smoke-\(UUID().uuidString)"
        defer {
            unlink(output + ".out")
            unlink(output + ".err")
        }
        let child = try ChildProcess(
            "/bin/bash",
            [Self.repository + "/Benchmarks/run.sh", "--quick", "--no-rclone", "--latency-ms", "0", "--binary", MountFixture.binary],
            stdout: output + ".out", stderr: output + ".err")
        let finished = await child.wait(timeout: .seconds(170))
        if !finished {
            // SIGTERM lets run.sh's trap unmount and stop what it started.
            child.signal(SIGTERM)
            if !(await child.wait(timeout: .seconds(5))) { await child.terminate() }
        }
        let table = (try? String(contentsOfFile: output + ".out", encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? ""
        try #require(finished, "run.sh did not finish in time\n\(errors)")
        #expect(child.terminationStatus == 0, "run.sh failed:\n\(errors)\n\(table)")
        for row in ["| W1 ", "| W2 ", "| W2 no-op libfuse fs", "| W3 ", "| W4 ", "| W5 ", "| W6 ", "| W7 ", "| S1 mount from the dist dir", "| S1 mount over HTTP", "| S1 floor: manifest", "| S1 floor: index fetched", "| S1 daemon VmRSS", "| S1 find", "| W8a pack bytes", "| W8b pack bytes", "| W8c pack bytes"] {
            #expect(table.contains(row), "no \(row) row in:\n\(table)")
        }
    }
}
