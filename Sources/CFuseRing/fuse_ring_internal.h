#ifndef CFUSE_RING_INTERNAL_H
#define CFUSE_RING_INTERNAL_H
// Shared by fuse_ring.c (rings, registry, hooks) and fuse_ring_queue.c (a queue's thread).
#include "CFuseRing.h"

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

// Kernel protocol 7.42, from include/uapi/linux/fuse.h (Linux 6.14+); this
// system's headers predate it. Layouts are checked below.
enum { RING_CMD_REGISTER = 1, RING_CMD_COMMIT_AND_FETCH = 2 };
enum { RING_HEADER_AREA = 128, RING_OP_AREA = 128, FUSE_MIN_READ_BUFFER = 8192 };

struct ring_in_header {
    uint32_t len, opcode;
    uint64_t unique, nodeid;
    uint32_t uid, gid, pid;
    uint16_t total_extlen, padding;
};
struct ring_out_header {
    uint32_t len;
    int32_t error;
    uint64_t unique;
};
struct ring_ent_in_out {
    uint64_t flags;
    uint64_t commit_id;   // the request's unique, echoed in the commit
    uint32_t payload_sz;  // bytes used in the payload buffer, either direction
    uint32_t padding;
    uint64_t reserved;
};
// iov[0] of a REGISTER. in_out: fuse_in_header on fetch, fuse_out_header on
// commit. op_in: the request's first in-argument (its per-opcode struct, empty
// for some opcodes); every further in-argument is in the payload. On commit all
// out-arguments go in the payload.
struct ring_req_header {
    char in_out[RING_HEADER_AREA];
    char op_in[RING_OP_AREA];
    struct ring_ent_in_out ent;
};
// The 80-byte command area of a 128-byte SQE.
struct ring_cmd_req {
    uint64_t flags;
    uint64_t commit_id;
    uint16_t qid;
    uint8_t padding[6];
};
_Static_assert(sizeof(struct ring_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct ring_out_header) == 16, "fuse_out_header");
_Static_assert(sizeof(struct ring_ent_in_out) == 32, "fuse_uring_ent_in_out");
_Static_assert(sizeof(struct ring_req_header) == 288, "fuse_uring_req_header");
_Static_assert(sizeof(struct ring_cmd_req) == 24, "fuse_uring_cmd_req");

struct ring_queue;

struct ring_entry {
    struct ring_queue *queue;
    struct ring_req_header *header;
    char *payload;
    char *request;               // the request re-assembled as /dev/fuse delivers it
    struct iovec iov[2];         // header, payload: REGISTER's argument
    _Atomic uint64_t awaiting;   // unique of the request in userspace; 0 = none
    uint64_t commit_id;          // set when the reply is in the entry
    struct ring_entry *next;     // in the queue's commit list
    int dead;                    // the kernel ended it (connection gone)
};

struct ring_queue {
    struct cfusering *ring;
    uint16_t qid;
    struct io_uring uring;
    int uring_ready;
    int event_fd;
    uint64_t event_value;
    pthread_t thread;
    int thread_started;
    _Atomic int thread_done;
    pthread_mutex_t lock;        // guards the commit list
    struct ring_entry *commit_head, *commit_tail;
    struct ring_entry *entries;
};

struct cfusering {
    struct fuse_session *session;
    void *userdata;
    int device_fd;
    uint32_t depth, queue_count;
    size_t payload_size;
    struct ring_queue *queues;
    _Atomic int state;
    _Atomic int error;
    _Atomic uint32_t registered_queues;
    _Atomic uint64_t requests;
    _Atomic int stopping;
    int exit_fd;                 // readable once the session should exit (wakes libfuse's readers)
    struct cfusering *next_ring; // in the registry
};

/// The rings of live sessions, found by libfuse userdata from the I/O hooks.
extern pthread_rwlock_t cfusering_registry_lock;
/// Records a setup failure (the first errno wins).
void cfusering_fail(struct cfusering *ring, int error);
/// The ring of a session, with the registry lock held.
struct cfusering *cfusering_find(void *userdata);
/// The reply hook: copies a reply into the entry awaiting its unique and queues the
/// commit; the bytes taken, or -1 (not a ring request: send it to /dev/fuse).
ssize_t cfusering_route_reply(const struct iovec *iov, int count, void *userdata);
/// Wakes a queue's thread (its ring reads the queue's eventfd).
void cfusering_wake_queue(struct ring_queue *queue);
/// A queue's thread: registers its entries, then dispatches requests and commits replies.
void *cfusering_queue_main(void *argument);

#endif
