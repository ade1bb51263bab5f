@testable import FUSEKit
import Foundation
import Testing

/// The check behind the rule that no reply leaves from a Swift task: it must tell a task
/// from the threads replies are meant to leave from.
struct ReplyThreadTests {
    @Test func aTaskIsRunningATaskButADispatchQueueAndAPlainThreadAreNot() async {
        #expect(ReplyThread.isRunningTask)
        let onQueue = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            DispatchQueue.global().async { continuation.resume(returning: ReplyThread.isRunningTask) }
        }
        #expect(!onQueue)
        let onThread = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread { continuation.resume(returning: ReplyThread.isRunningTask) }.start()
        }
        #expect(!onThread)
        let detached = await Task.detached { ReplyThread.isRunningTask }.value
        #expect(detached)
    }
}
