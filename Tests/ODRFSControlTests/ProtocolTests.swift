import Foundation
import NIOCore
@testable import ODRFSControl
import ODRFSCore
import Testing

@Suite struct ProtocolTests {
    func decode(_ text: String) -> Result<ControlRequest, ControlProtocol.DecodingFailure> {
        ControlProtocol.decodeRequest(Data(text.utf8))
    }

    @Test func requestsRoundTrip() throws {
        let operations: [ControlOperation] = [
            .status, .request(tags: ["Italy", "Rome"], loadingPriority: .urgent, conditional: false),
            .request(tags: ["Iceland"], loadingPriority: .value(0.25), conditional: true), .end(request: 3),
            .priorityGet(tags: ["Italy"]), .prioritySet(tags: ["Italy"], value: 0.75), .purge(tags: nil),
            .purge(tags: ["Rome"]), .cancel(request: 9), .watchDisk, .watchEvents, .trace(sessions: 1), .trace(sessions: 7),
            .variant(preferences: try VariantPreferences(arguments: ["tcf=astc,etc2", "locale=it"])),
        ]
        for (offset, operation) in operations.enumerated() {
            let request = ControlRequest(id: offset, operation: operation)
            let line = ControlProtocol.encode(request)
            #expect(!line.contains(UInt8(ascii: "\n")))
            #expect(String(decoding: line, as: UTF8.self).contains("\"v\":1"))
            #expect(try decode(String(decoding: line, as: UTF8.self)).get() == request)
        }
    }

    @Test func traceSessionsAreBounded() throws {
        #expect(try decode(#"{"v":1,"id":1,"op":"trace"}"#).get().operation == .trace(sessions: 1))
        for bad in ["0", "-1", "1001", "1e9"] {
            let failure = try #require(decode(#"{"v":1,"id":2,"op":"trace","sessions":\#(bad)}"#).failureValue, "sessions \(bad) accepted")
            #expect(failure.error.code == .badRequest)
        }
    }

    @Test func wireFormIsTheDocumentedOne() throws {
        let request = ControlRequest(id: 7, operation: .request(tags: ["Italy"], loadingPriority: .urgent, conditional: false))
        #expect(String(decoding: ControlProtocol.encode(request), as: UTF8.self)
            == #"{"conditional":false,"id":7,"loadingPriority":"urgent","op":"request","tags":["Italy"],"v":1}"#)
        let error = ControlResponse.failure(7, ControlError(.invalidTag, "unknown tag 'X'"))
        #expect(String(decoding: ControlProtocol.encode(error), as: UTF8.self)
            == #"{"error":{"code":"invalid-tag","message":"unknown tag 'X'","odrCode":4994},"id":7,"ok":false,"v":1}"#)
        let anonymous = ControlResponse.failure(nil, ControlError(.badRequest, "malformed JSON"))
        #expect(String(decoding: ControlProtocol.encode(anonymous), as: UTF8.self)
            == #"{"error":{"code":"bad-request","message":"malformed JSON","odrCode":null},"id":null,"ok":false,"v":1}"#)
        #expect(String(decoding: ControlProtocol.encode(ControlResponse.progress(2, completed: 5, total: 10)), as: UTF8.self)
            == #"{"completed":5,"event":"progress","id":2,"total":10,"v":1}"#)
    }

    @Test func responsesRoundTrip() throws {
        var status = ControlResponse.success(1)
        status.status = StatusSnapshot(
            packs: [.init(id: "Italy", tags: ["Italy"], bytes: 10, state: .downloading, percent: 40, retainCount: 1,
                          lastAccess: Date(timeIntervalSince1970: 1_700_000_000), preservationPriority: 0.5, fetchCount: 2)],
            tagPriorities: [("Italy", 0.5)], cache: .init(cachedBytes: 10, budget: 100, maximumInUse: 1000))
        var purge = ControlResponse.success(2)
        purge.purge = PurgeSummary(evicted: [.init(id: "Rome", bytes: 3)], kept: ["Italy"])
        var priorities = ControlResponse.success(3)
        priorities.priorities = ["Italy": 0.5]
        let responses = [status, purge, priorities, .lowDiskSpace(4, LowDiskSpaceEvent(availableBytes: 5, minimumFree: nil)),
                         .failure(5, ControlError(.outOfSpace, "full"))]
        for response in responses {
            #expect(try ControlProtocol.decodeResponse(ControlProtocol.encode(response)) == response)
        }
        #expect(status.status?.tags.first?.state == .downloading)
    }

    @Test func variantRequestsAreCheckedAndRepliesUseTheContractNames() throws {
        let request = try decode(#"{"v":1,"id":3,"op":"variant","variants":{"tcf":["astc","bc7"],"locale":["it"]}}"#).get()
        #expect(request.operation == .variant(preferences: try VariantPreferences(wire: ["tcf": ["astc", "bc7"], "locale": ["it"]])))
        #expect(request.operation.changesTheMount, "only the owner and root may switch a shared mount's variants")
        for bad in [#""variants":{}"#, #""variants":{"tcf":[]}"#, #""variants":{"TCF":["astc"]}"#,
                    #""variants":{"tcf":["as tc"]}"#, #""variants":{"tcf":[""]}"#, #""variants":{"a_b":["x"]}"#, #""variants":[]"#, ""] {
            let text = #"{"v":1,"id":3,"op":"variant""# + (bad.isEmpty ? "" : "," + bad) + "}"
            let failure = try #require(decode(text).failureValue, "accepted \(text)")
            #expect(failure.error.code == .badRequest, "\(text)")
            #expect(failure.id == 3)
        }
        var reply = ControlResponse.success(3)
        reply.variant = VariantReport(variants: ["tcf": "astc"], changedPacks: ["Level1[tcf=astc]"], downloadBytes: 42)
        #expect(try ControlProtocol.decodeResponse(ControlProtocol.encode(reply)) == reply)
        // The contract's names (snake_case), whatever order an encoder writes them in.
        let object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(try #require(reply.variant))) as? [String: Any]
        #expect(Set(object?.keys.map { $0 } ?? []) == ["variants", "changed_packs", "download_bytes"])
        #expect(object?["download_bytes"] as? Int == 42)
    }

    @Test func malformedJSONIsABadRequestWithoutID() {
        for text in ["{", "not json", "[1,2]", "{\"v\":1,\"id\":1,\"op\":\"status\"", "\u{1}\u{2}", "{\"v\":1}"] {
            guard case .failure(let failure) = decode(text) else { Issue.record("decoded \(text)"); continue }
            #expect(failure.error.code == .badRequest)
            #expect(failure.id == nil)
        }
    }

    @Test func unknownOpAndBadFieldsKeepTheID() {
        let cases: [(String, ControlError.Code)] = [
            (#"{"v":1,"id":4,"op":"explode"}"#, .badRequest),
            (#"{"v":1,"id":4}"#, .badRequest),
            (#"{"v":1,"id":4,"op":"request"}"#, .badRequest),
            (#"{"v":1,"id":4,"op":"request","tags":[]}"#, .badRequest),
            (#"{"v":1,"id":4,"op":"request","tags":["A"],"loadingPriority":2}"#, .badRequest),
            (#"{"v":1,"id":4,"op":"request","tags":["A"],"loadingPriority":"soon"}"#, .badRequest),
            (#"{"v":1,"id":4,"op":"priority.set","tags":["A"],"value":1.5}"#, .badRequest),
            (#"{"v":1,"id":4,"op":"end"}"#, .badRequest),
            (#"{"v":1,"id":4,"op":"purge"}"#, .badRequest),
            (#"{"v":1,"id":4,"op":"purge","all":true,"tags":["A"]}"#, .badRequest),
            (#"{"v":2,"id":4,"op":"status"}"#, .unsupportedVersion),
            (#"{"id":4,"op":"status"}"#, .unsupportedVersion),
        ]
        for (text, code) in cases {
            guard case .failure(let failure) = decode(text) else { Issue.record("decoded \(text)"); continue }
            #expect(failure.error.code == code, "\(text)")
            #expect(failure.id == 4, "\(text)")
        }
    }

    @Test func lineFramesSplitAndBoundLines() {
        var decoder = LineFrameDecoder(limit: 8)
        var buffer = ByteBuffer()
        func feed(_ text: String) -> [ControlFrame] {
            buffer.writeString(text)
            var frames: [ControlFrame] = []
            while let frame = decoder.next(&buffer) { frames.append(frame) }
            return frames
        }
        #expect(feed("ab") == [])
        #expect(feed("c\nde\nf") == [.line(ByteBuffer(string: "abc")), .line(ByteBuffer(string: "de"))])
        #expect(buffer.readableBytes == 1)              // "f": a truncated message, dropped at end of stream
        #expect(feed("12345678\n") == [.oversized])     // "f12345678": 9 bytes, over the limit of 8
        #expect(feed("ok\n") == [])                     // nothing after an oversized line
    }

    @Test func aLineOfExactlyTheLimitPasses() {
        var decoder = LineFrameDecoder(limit: 4)
        var buffer = ByteBuffer(string: "abcd")
        #expect(decoder.next(&buffer) == nil)
        buffer.writeString("\n")
        #expect(decoder.next(&buffer) == .line(ByteBuffer(string: "abcd")))
    }

    @Test func errorsCarryODRCodes() {
        #expect(ControlError(.invalidTag, "x").odrCode == 4994)
        #expect(ControlError(.exceededMaximumSize, "x").odrCode == 4993)
        #expect(ControlError(.outOfSpace, "x").odrCode == 4992)
        #expect(ControlError(.originUnreachable, "x").odrCode == nil)
        #expect("\(ControlError(.notLocal, "Rome is not local"))" == "Rome is not local")
    }

    @Test func runtimeDirectoryDerivesTheSocketFromTheMountpoint() {
        let runtime = RuntimeDirectory(mountpoint: "/mnt/travel")
        #expect(runtime.controlSocket == runtime.path + "/control.sock")
        #expect(runtime.path == RuntimeDirectory(mountpoint: "/mnt/travel").path)
        #expect(runtime.path != RuntimeDirectory(mountpoint: "/mnt/travel2").path)
        #expect(RuntimeDirectory(resolvingMountpoint: "/tmp/../tmp/.").path == RuntimeDirectory(mountpoint: RuntimeDirectory.resolve(mountpoint: "/tmp")).path)
    }

    @Test func statusTableListsTagsAndPacks() {
        let snapshot = StatusSnapshot(
            packs: [.init(id: "base", tags: [], bytes: 1, state: .downloaded),
                    .init(id: "Italy", tags: ["Italy"], bytes: 10, state: .downloading, percent: 40),
                    .init(id: "Italy+Rome", tags: ["Italy", "Rome"], bytes: 5, state: .inUse, retainCount: 2)],
            tagPriorities: [("Italy", 0.5), ("Rome", 0)], cache: .init(cachedBytes: 6, maximumInUse: 100))
        let table = snapshot.renderTable()
        #expect(table.contains("TAG"))
        #expect(table.contains("PACK"))
        #expect(table.contains("downloading(40%)"))
        #expect(table.split(separator: "\n").contains { $0.hasPrefix("Italy ") && $0.contains("in-use") && $0.contains("Italy,Italy+Rome") })
        #expect(table.contains("total: 2/3 packs local, 6/16 bytes local, 5 bytes in use"))
    }
}

extension Result {
    /// The error, if this is a failure.
    fileprivate var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
