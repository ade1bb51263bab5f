#ifndef CFUSE_RING_H
#define CFUSE_RING_H
// FUSE over io_uring (kernel protocol 7.42, Linux 6.14+) as a transport UNDER
// libfuse 3.14, which predates it. libfuse still mounts, answers INIT and
// dispatches every request (`fuse_session_process_buf`); this file only moves
// requests and replies: per-CPU queues of ring entries registered on the
// session's /dev/fuse descriptor with IORING_OP_URING_CMD, one thread per queue.
// A completed entry becomes a request buffer laid out as /dev/fuse delivers it;
// the reply that libfuse writes for that request's `unique` (through the custom
// I/O hooks of CFusePassthrough) is copied back into the entry and committed with
// FUSE_IO_URING_CMD_COMMIT_AND_FETCH by the queue's own thread. FORGET, INTERRUPT
// and notifications stay on /dev/fuse (the kernel never puts them on the ring).
#include <stdint.h>

struct fuse_session;

/// The ring of one session. Opaque.
struct cfusering;

enum cfusering_state {
    /// Waiting for the INIT reply that asks for io_uring.
    CFUSERING_WAITING_FOR_INIT = 0,
    /// Registering entries on every queue.
    CFUSERING_STARTING = 1,
    /// Every queue has entries registered: the kernel sends requests through the ring.
    CFUSERING_ACTIVE = 2,
    /// Setting up failed (`cfusering_error` says why); requests stay on /dev/fuse.
    CFUSERING_FAILED = 3,
    /// Stopped at teardown.
    CFUSERING_STOPPED = 4,
};

/// Creates the ring of `session` (mounted, hooks installed) whose libfuse
/// userdata is `session_userdata`, with `depth` entries per queue, and installs
/// the routing hooks. Nothing talks to the kernel until the INIT reply that asks
/// for io_uring has been written. NULL on allocation failure.
struct cfusering *cfusering_create(struct fuse_session *session, void *session_userdata, uint32_t depth);

/// The state, the errno of a failure (0 if none), the number of queues and how
/// many requests went through the ring so far.
enum cfusering_state cfusering_state(const struct cfusering *ring);
int cfusering_error(const struct cfusering *ring);
uint32_t cfusering_queue_count(const struct cfusering *ring);
uint64_t cfusering_request_count(const struct cfusering *ring);

/// Stops the queue threads (closing their rings cancels the entries waiting in
/// the kernel) and waits for them at most `timeout_ms`. Call after the
/// filesystem is unmounted and before the session's descriptor is closed.
/// 0, or -ETIMEDOUT if a thread did not stop (it is then left running).
int cfusering_stop(struct cfusering *ring, uint32_t timeout_ms);

/// Makes libfuse's workers blocked on /dev/fuse look at the session's exit flag
/// (with a ring, requests that would wake them no longer come that way).
void cfusering_wake_loop(struct cfusering *ring);

/// Frees a stopped ring (or one never started); no-op if a thread is still running.
void cfusering_destroy(struct cfusering *ring);

/// The number of CPUs the kernel makes queues for (num_possible_cpus).
uint32_t cfusering_possible_cpus(void);

#endif
