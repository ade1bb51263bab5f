import Foundation

/// The wire format of protocol v1: one JSON object per line (UTF-8, `\n`-terminated).
public enum ControlProtocol {
    /// The protocol version every message carries as `"v"`.
    public static let version = 1
    /// The largest request line the daemon accepts, newline excluded (64 KiB). A longer
    /// one gets a `bad-request` reply and the connection is closed.
    public static let maximumRequestLength = 64 * 1024
    /// The largest reply line a client accepts (a status of a huge bundle is large).
    public static let maximumResponseLength = 64 * 1024 * 1024

    /// Why a request line could not be decoded: the reply to send.
    public struct DecodingFailure: Error, Sendable, Equatable {
        /// The request's id, if it could be read.
        public var id: Int?
        /// The error to reply with.
        public var error: ControlError
    }

    /// One line (without its newline) for `request`.
    public static func encode(_ request: ControlRequest) -> Data {
        line(request.wire)
    }

    /// One line (without its newline) for `response`.
    public static func encode(_ response: ControlResponse) -> Data {
        line(response)
    }

    /// Decodes and validates one request line (without its newline).
    public static func decodeRequest(_ line: Data) -> Result<ControlRequest, DecodingFailure> {
        struct Envelope: Decodable {
            var v: Int?
            var id: Int?
        }
        let decoder = makeDecoder()
        guard let envelope = try? decoder.decode(Envelope.self, from: line) else {
            let reason = (try? JSONSerialization.jsonObject(with: line)) == nil
                ? "malformed JSON" : "a message must be a JSON object with a numeric \"v\" and \"id\""
            return .failure(DecodingFailure(id: nil, error: ControlError(.badRequest, "\(reason): \(preview(line))")))
        }
        guard let id = envelope.id else {
            return .failure(DecodingFailure(id: nil, error: ControlError(.badRequest, "the message has no numeric \"id\"")))
        }
        guard envelope.v == version else {
            let seen = envelope.v.map(String.init) ?? "none"
            return .failure(DecodingFailure(id: id, error: ControlError(.unsupportedVersion, "protocol version \(seen) is not supported; this daemon speaks \"v\":\(version)")))
        }
        let wire: WireRequest
        do {
            wire = try decoder.decode(WireRequest.self, from: line)
        } catch {
            return .failure(DecodingFailure(id: id, error: ControlError(.badRequest, "invalid field: \(describe(error))")))
        }
        do throws(ControlError) {
            return .success(try ControlRequest(wire: wire, id: id))
        } catch {
            return .failure(DecodingFailure(id: id, error: error))
        }
    }

    /// Decodes one reply or event line (without its newline).
    public static func decodeResponse(_ line: Data) throws(ControlError) -> ControlResponse {
        let response: ControlResponse
        do {
            response = try makeDecoder().decode(ControlResponse.self, from: line)
        } catch {
            throw ControlError(.internalError, "the daemon sent a malformed message: \(describe(error))")
        }
        guard response.v == version else {
            throw ControlError(.unsupportedVersion, "the daemon speaks protocol version \(response.v), this client \(version)")
        }
        return response
    }

    /// Encodes with the protocol's conventions: sorted keys, ISO 8601 dates.
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        // Never fails on NaN or infinity: the peer rejects the string instead.
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return encoder
    }

    /// Decodes with the protocol's conventions.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    private static func line(_ value: some Encodable) -> Data {
        do {
            return try makeEncoder().encode(value)
        } catch {
            // Nothing in these types can fail to encode (non-finite doubles become strings).
            preconditionFailure("cannot encode a control message: \(error)")
        }
    }

    private static func preview(_ line: Data) -> String {
        let text = String(decoding: line.prefix(60), as: UTF8.self)
        return line.count > 60 ? text + "…" : text
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context),
             DecodingError.valueNotFound(_, let context), DecodingError.keyNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }
}
