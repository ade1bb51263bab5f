import ODRFSBuild
import ODRFSCore

/// Command-line values a script or a unit file may pass on from elsewhere: sizes and rates
/// (`--cache-size 64M`, `--chunk-size`, `--max-background-rate`), `--expires 30d`,
/// `--compress zstd:LEVEL` and `--metrics ADDR:PORT`. Each parser gets the whole input;
/// what it accepts must be in range and read back the same from its own description.
enum OptionsTarget {
    static func run(_ text: String) {
        if let size = ByteCount(parsing: text) {
            check(size.value >= 0, "size \(text.debugDescription) parsed to a negative \(size.value)")
            check(ByteCount(parsing: String(size.value)) == size, "size \(size.value) (from \(text.debugDescription)) does not read back")
        }
        if let expiry = ExpiryDuration(parsing: text) {
            check(expiry.seconds > 0, "--expires \(text.debugDescription) parsed to \(expiry.seconds) s")
            check(ExpiryDuration(parsing: expiry.description)?.seconds == expiry.seconds, "--expires \(text.debugDescription) does not read back")
        }
        if let compression = CompressionSetting(parsing: text) {
            check(CompressionSetting(parsing: compression.description) == compression, "--compress \(text.debugDescription) does not read back")
        }
        if let address = MetricsAddress(text) {
            check((0...65535).contains(address.port), "--metrics \(text.debugDescription) gave port \(address.port)")
            check(!address.host.isEmpty, "--metrics \(text.debugDescription) gave an empty host")
            check(MetricsAddress(address.description) == address, "--metrics \(text.debugDescription) gave \(address), which reads back differently")
        }
    }
}
