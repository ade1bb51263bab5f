import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing
@testable import ODRFSFetch

/// The origin client's HTTP/2 windows (issue 27, item 5): right after a connection's first
/// SETTINGS exchange, an 8 MiB initial stream window and a 16 MiB larger connection window,
/// so no response waits a round trip per 64 KiB on a long link.
@Suite struct HTTP2WindowsTests {
    @Test func theHookSendsSettingsThenAWindowUpdate() throws {
        let channel = EmbeddedChannel()
        try HTTP2Windows.open(channel).wait()
        channel.embeddedEventLoop.run()
        let settings = try #require(try channel.readOutbound(as: HTTP2Frame.self))
        #expect(settings.streamID == .rootStream)
        guard case .settings(.settings(let values)) = settings.payload else {
            Issue.record("first frame is not SETTINGS: \(settings.payload)")
            return
        }
        #expect(values == [HTTP2Setting(parameter: .initialWindowSize, value: 8 << 20)])
        let update = try #require(try channel.readOutbound(as: HTTP2Frame.self))
        guard case .windowUpdate(let increment) = update.payload else {
            Issue.record("second frame is not WINDOW_UPDATE: \(update.payload)")
            return
        }
        #expect(update.streamID == .rootStream && increment == 16 << 20)
        #expect(try channel.readOutbound(as: HTTP2Frame.self) == nil)
    }
}
