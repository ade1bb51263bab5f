import CLibFuzzer
import Foundation

/// libFuzzer's entry point: one input per call, any bytes, any length.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: data == nil ? 0 : size)
    FuzzTarget.selected.run(bytes)
    return 0
}

// Resolve the target before libFuzzer starts, so a missing ODRFS_FUZZ_TARGET is a usage error
// rather than a "crash" on the first input.
_ = FuzzTarget.selected
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzTestOneInput))
