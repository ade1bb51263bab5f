import CFuse3

/// libfuse's request handle, made sendable so a pending request can sit in a
/// table that several threads touch.
///
/// INVARIANT: a `RawRequest` is dereferenced only while the request is still
/// unanswered — libfuse frees it inside the reply call — and only while the
/// session is alive (see `ReplyGate`).
struct RawRequest: @unchecked Sendable {
    let pointer: fuse_req_t
}
