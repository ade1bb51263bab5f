import Synchronization

/// A value shared between a test and the code under test (clocks, probes).
public final class LockedValue<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) {
        mutex = Mutex(value)
    }

    public func withLock<R>(_ body: (inout Value) -> R) -> R {
        mutex.withLock { body(&$0) }
    }

    public var value: Value {
        get { mutex.withLock { $0 } }
        set { mutex.withLock { $0 = newValue } }
    }
}
