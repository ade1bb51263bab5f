import CBuildInfo

/// The version of ODRFS, written here and nowhere else: `odrfs --version` prints it with the
/// commit the binary was built from, and mount-scripts/package.sh names the Debian package
/// after what the built binary prints.
enum ODRFSVersion {
    /// The release number (Debian's upstream version: digits and dots).
    static let number = "0.1.0"

    /// The commit baked in by mount-scripts/package.sh, or "unknown" for a plain `swift build`.
    static var commit: String { String(cString: odrfs_build_commit()) }

    /// What `odrfs --version` prints: `0.1.0 (commit 8ec31c9…)`.
    static var description: String { "\(number) (commit \(commit))" }
}
