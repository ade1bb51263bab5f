import Foundation
import ODRFSControl

extension BundleResourceRequest {
    /// A stream of the messages a `watch-*` operation pushes, each turned into an element
    /// by `element` (nil: skipped). Ends the watch (`end`) when the consumer stops
    /// iterating; throws ``BundleResourceRequestError/daemonUnavailable(_:)`` when the
    /// daemon goes away first.
    static func watch<Element: Sendable>(
        _ operation: ControlOperation, mountpoint: String,
        bufferingPolicy: AsyncThrowingStream<Element, any Error>.Continuation.BufferingPolicy = .unbounded,
        element: @escaping @Sendable (ControlResponse) -> Element?
    ) -> AsyncThrowingStream<Element, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        let task = Task {
            do throws(ControlError) {
                let client = try await SharedControlClient.client(mountpoint: mountpoint)
                let reply = try await client.call(operation) { response in
                    if let value = element(response) { continuation.yield(value) }
                }
                await client.waitUntilClosed()   // or until the consumer stops iterating
                if Task.isCancelled {
                    if let id = reply.id { client.post(.end(request: id)) }
                    continuation.finish()
                } else {
                    continuation.finish(throwing: BundleResourceRequestError.daemonUnavailable("the ODRFS daemon of \(mountpoint) went away"))
                }
            } catch {
                continuation.finish(throwing: BundleResourceRequestError(error))
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
