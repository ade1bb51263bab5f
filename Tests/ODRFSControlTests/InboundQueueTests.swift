import NIOCore
@testable import ODRFSControl
import Synchronization
import Testing

/// The inbound backpressure of one connection: reading stops while too many requests
/// wait and starts again once the handler has caught up.
@Suite(.timeLimit(.minutes(1))) struct InboundQueueTests {
    @Test func readingPausesAtTheHighWaterMarkAndResumesAtTheLowOne() async {
        let resumed = Mutex(0)
        let queue = InboundQueue { resumed.withLock { $0 += 1 } }
        for number in 0..<InboundQueue.highWater {
            #expect(queue.mayRead(), "paused early, at \(number)")
            queue.push(.line(ByteBuffer(string: "\(number)")))
        }
        #expect(!queue.mayRead())   // full: the socket is not read; the read is remembered
        var taken = 0
        while taken < InboundQueue.highWater - InboundQueue.lowWater - 1 {
            _ = await queue.next()
            taken += 1
        }
        #expect(resumed.withLock { $0 } == 0)
        #expect(await queue.next() == .line(ByteBuffer(string: "\(taken)")))   // in order
        #expect(resumed.withLock { $0 } == 1)   // caught up to the low-water mark: read again
        #expect(queue.mayRead())
    }

    @Test func endOfInputDrainsButACloseDiscards() async {
        let drained = InboundQueue {}
        drained.push(.line(ByteBuffer(string: "a")))
        drained.finish(discarding: false)
        drained.push(.line(ByteBuffer(string: "late")))   // after the end: ignored
        #expect(await drained.next() == .line(ByteBuffer(string: "a")))
        #expect(await drained.next() == nil)

        let closed = InboundQueue {}
        closed.push(.line(ByteBuffer(string: "a")))
        closed.finish(discarding: true)
        #expect(await closed.next() == nil)
    }
}
