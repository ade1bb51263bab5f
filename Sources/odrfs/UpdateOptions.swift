import ArgumentParser
import ODRFSBuild
import ODRFSMount

/// `odrfs mount --update-interval DURATION --update-policy auto|notify|manual`.
struct UpdateOptions: ParsableArguments {
    @Option(name: .long, help: "Ask the origin for a newer revision this often (e.g. 300s, 15m, 1h; a conditional GET with the manifest's ETag). Default: never by itself.")
    var updateInterval: String?

    @Option(name: .long, help: "What a periodic check does when a newer revision is available: auto (switch to it), notify (status shows it; the default) or manual (no periodic checks).")
    var updatePolicy: UpdateSettings.Policy = .notify

    func validate() throws {
        if let updateInterval, ExpiryDuration(parsing: updateInterval) == nil {
            throw ValidationError("--update-interval must be a whole number and s, m, h or d (e.g. 300s, 15m), not '\(updateInterval)'")
        }
    }

    var settings: UpdateSettings {
        UpdateSettings(intervalSeconds: updateInterval.flatMap(ExpiryDuration.init(parsing:))?.seconds, policy: updatePolicy)
    }
}

extension UpdateSettings.Policy: ExpressibleByArgument {}
