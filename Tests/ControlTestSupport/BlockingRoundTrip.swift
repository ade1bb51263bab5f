import Foundation

/// Connects to `socketPath`, sends `line` and reads one reply line, all with blocking
/// calls on the calling thread, within `timeout`: the time it returns is the server's
/// latency alone. Call it through `onDedicatedThread` — measured with async reads on
/// the cooperative pool instead, a parallel test run adds its own queueing (seconds on
/// two cores, when the suites start) to what the test means to measure.
public func blockingRoundTrip(socketPath: String, line: String, timeout: Duration) -> (reply: String?, elapsed: Duration) {
    let started = ContinuousClock.now
    let deadline = started + timeout
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return (nil, .zero) }
    defer { close(fd) }
    guard withUnixAddress(socketPath, { connect(fd, $0, $1) }) == 0 else { return (nil, ContinuousClock.now - started) }
    let bytes = Array(line.utf8)
    guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
        return (nil, ContinuousClock.now - started)
    }
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while !received.contains(UInt8(ascii: "\n")) {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { return (nil, ContinuousClock.now - started) }
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
        let ready = poll(&poller, 1, milliseconds)
        if ready < 0 && errno == EINTR { continue }
        guard ready > 0 else { return (nil, ContinuousClock.now - started) }
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { return (nil, ContinuousClock.now - started) }
        received += chunk[0..<count]
    }
    let elapsed = ContinuousClock.now - started
    let end = received.firstIndex(of: UInt8(ascii: "\n"))!
    return (String(decoding: received[..<end], as: UTF8.self), elapsed)
}
