import Foundation

/// Whether real mounts can run here. Mount tests are the point of this target: in CI
/// (`CI=true`) they never skip — a missing /dev/fuse or fusermount3 fails them loudly.
enum FUSEAvailability {
    static var isCI: Bool {
        ProcessInfo.processInfo.environment["CI"].map { ["1", "true", "yes"].contains($0.lowercased()) } ?? false
    }

    static var problem: String? {
        if access("/dev/fuse", R_OK | W_OK) != 0 {
            return "/dev/fuse is missing or not accessible (\(String(cString: strerror(errno))))"
        }
        if access("/usr/bin/fusermount3", X_OK) != 0 {
            return "/usr/bin/fusermount3 is missing (apt-get install fuse3)"
        }
        return nil
    }

    /// Run the suite when FUSE works, and always in CI (where the first check fails it).
    static var shouldRun: Bool {
        if let problem, !isCI {
            print("⚠️  SKIPPING mount tests: \(problem). In CI these tests fail instead of skipping.")
            return false
        }
        return true
    }
}
