import ArgumentParser
import Foundation
import ODRFSControl

/// Exit codes of the commands that talk to a mount's daemon (status, request, priority, purge).
enum ControlExitCode {
    static let help = """
        Exit codes: 0 ok; 1 error (no daemon at the mountpoint, ...); \
        3 not local (request --conditional); 4 invalid tag; 5 exceeded maximum in-use size; \
        6 out of space; 7 origin unreachable; 8 resource unavailable (pack missing or corrupt \
        on the origin); 9 permission denied (another user's mount, or a change only its \
        owner and root may make); 64 usage error.
        """
    static let notLocal: Int32 = 3

    static func code(for error: ControlError) -> Int32 {
        switch error.code {
        case .notLocal: notLocal
        case .invalidTag: 4
        case .exceededMaximumSize: 5
        case .outOfSpace: 6
        case .originUnreachable: 7
        case .resourceUnavailable: 8
        case .permissionDenied: 9
        default: 1
        }
    }

    /// Prints `odrfs <command>: <message>` to stderr and exits with the error's code.
    static func fail(_ command: String, _ error: ControlError) -> Never {
        FileHandle.standardError.write(Data("odrfs \(command): \(error.message)\n".utf8))
        exit(code(for: error))
    }

    /// Connects to the daemon of `mountpoint`, or fails with a clear message.
    static func connect(_ command: String, _ mountpoint: String) async -> ControlClient {
        do {
            return try await ControlClient.connect(mountpoint: mountpoint)
        } catch {
            fail(command, error)
        }
    }
}
