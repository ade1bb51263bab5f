import ArgumentParser
import ODRFSMount

/// `odrfs mount`'s choice of kernel transport.
struct TransportOptions: ParsableArguments {
    @Flag(name: .customLong("io-uring"), help: "Take FUSE requests through io_uring (Linux 6.14+ with CONFIG_FUSE_IO_URING; as root it sets the fuse module parameter enable_uring). Without kernel support the mount uses /dev/fuse and logs why; `odrfs status` shows the transport.")
    var ioUring = false

    /// Copies the options into the daemon's configuration.
    func apply(to configuration: inout MountConfiguration) {
        configuration.ioUring = ioUring
    }
}
