import ArgumentParser
import Foundation
import ODRFSFetch

/// `odrfs config`: the bundles configured in `/etc/odrfs/bundles.d/NAME.conf`, which
/// autofs mounts at `/odr/NAME` on first access and `mount.odrfs NAME` mounts from fstab.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check configured bundles (/etc/odrfs/bundles.d/NAME.conf) and answer for autofs and mount.odrfs.",
        discussion: """
            A bundle NAME is configured by /etc/odrfs/bundles.d/NAME.conf (ODRFS_BUNDLES_DIR \
            names another folder), one 'key = value' per line, '#' starts a comment:
              origin = https://cdn.example.com/travel     (required: http(s) URL, absolute path or file:// URL)
              mirrors = URL[,token-file=F] ...            (up to 15, separated by spaces)
              token-file = /etc/odrfs/travel.token         ca-file = /etc/odrfs/ca.pem
              trust-key = /etc/odrfs/travel.pub ...        (up to 8, separated by spaces)
              store = /var/cache/odrfs   cache-size = 2G      cache = /srv/travel-cache (private)
              min-free = 1G       max-in-use = 2G          fetch-timeout = 30   (seconds)
              max-background-rate = 2M                     proxy = http://squid:3128
              offline = no                                 log-level = info
              variants = tcf=astc,etc2 locale=it          (--variant, one KEY=VALUE[,VALUE...] per key)

            Each key means what the `odrfs mount` option of the same name does and is checked \
            the same way; a key may appear once. NAME is 1-64 letters, digits, '.', '_' or '-', \
            starting with a letter or digit, without '..'.
            """,
        subcommands: [ConfigCheckCommand.self, ConfigArgumentsCommand.self, ConfigAutofsCommand.self]
    )

    /// The configuration of `name` from `ODRFS_BUNDLES_DIR` or /etc/odrfs/bundles.d, or a
    /// ValidationError saying why not.
    static func load(_ name: String) throws -> (name: BundleName, configuration: BundleConfiguration) {
        guard let bundle = BundleName(name) else {
            throw ValidationError("'\(name)' is not a bundle name (1-\(BundleName.maximumLength) letters, digits, '.', '_' or '-', starting with a letter or digit, no '..')")
        }
        do {
            return (bundle, try BundleDirectory().load(bundle))
        } catch {
            throw ValidationError("bundle \(bundle): \(error)")
        }
    }
}
