/// What a running mount does about new revisions on its own (`odrfs mount
/// --update-interval DURATION --update-policy auto|notify|manual`).
public struct UpdateSettings: Sendable, Codable, Equatable {
    /// `--update-policy`.
    public enum Policy: String, Sendable, Codable, CaseIterable {
        /// Check every interval and switch to a newer revision at once.
        case auto
        /// Check every interval; status shows that an update is available (the default).
        case notify
        /// Never check by itself; only `odrfs update` does.
        case manual
    }

    /// Seconds between checks; nil: no periodic check.
    public var intervalSeconds: Int64?
    public var policy: Policy

    public init(intervalSeconds: Int64? = nil, policy: Policy = .notify) {
        self.intervalSeconds = intervalSeconds
        self.policy = policy
    }

    /// The interval at which the daemon checks, or nil when it never does by itself.
    public var checkInterval: Duration? {
        guard policy != .manual, let intervalSeconds, intervalSeconds > 0 else { return nil }
        return .seconds(intervalSeconds)
    }
}
