import ArgumentParser
import ODRFSMount

/// `--passthrough auto|off`.
extension PassthroughSettings.Mode: ExpressibleByArgument {}
