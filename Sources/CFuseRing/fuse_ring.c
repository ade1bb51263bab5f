#define _GNU_SOURCE
#define FUSE_USE_VERSION 312
#include "CFuseRing.h"

#include <CFusePassthrough.h>
#include <errno.h>
#include <fuse3/fuse_lowlevel.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

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

// The rings of live sessions, found by libfuse userdata from the I/O hooks.
static pthread_rwlock_t registry_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct cfusering *registry;

static void fail(struct cfusering *ring, int error) {
    int expected = 0;
    atomic_compare_exchange_strong(&ring->error, &expected, error);
    int state = atomic_load(&ring->state);
    if (state == CFUSERING_WAITING_FOR_INIT || state == CFUSERING_STARTING) {
        atomic_store(&ring->state, CFUSERING_FAILED);
    }
}

static struct cfusering *find_ring(void *userdata) {
    for (struct cfusering *ring = registry; ring != NULL; ring = ring->next_ring) {
        if (ring->userdata == userdata) return ring;
    }
    return NULL;
}

static void wake(struct ring_queue *queue) {
    uint64_t one = 1;
    ssize_t ignored = write(queue->event_fd, &one, sizeof(one));
    (void)ignored;
}

/// Puts a reply into the entry that carried its request; the queue's thread commits it.
static ssize_t route_reply(const struct iovec *iov, int count, void *userdata) {
    if (count < 1 || iov[0].iov_len != sizeof(struct ring_out_header)) return -1;
    struct ring_out_header out;
    memcpy(&out, iov[0].iov_base, sizeof(out));
    if (out.unique == 0) return -1; // a notification: /dev/fuse only
    pthread_rwlock_rdlock(&registry_lock);
    struct cfusering *ring = find_ring(userdata);
    struct ring_entry *entry = NULL;
    if (ring != NULL && !atomic_load(&ring->stopping)) {
        for (uint32_t q = 0; q < ring->queue_count && entry == NULL; q++) {
            struct ring_queue *queue = &ring->queues[q];
            for (uint32_t e = 0; e < ring->depth; e++) {
                uint64_t expected = out.unique;
                if (atomic_compare_exchange_strong(&queue->entries[e].awaiting, &expected, 0)) {
                    entry = &queue->entries[e];
                    break;
                }
            }
        }
    }
    if (entry == NULL) {
        pthread_rwlock_unlock(&registry_lock);
        return -1;
    }
    size_t total = 0, payload = 0;
    int overflow = 0;
    for (int i = 0; i < count; i++) total += iov[i].iov_len;
    for (int i = 1; i < count; i++) {
        if (iov[i].iov_len > ring->payload_size - payload) { overflow = 1; break; }
        memcpy(entry->payload + payload, iov[i].iov_base, iov[i].iov_len);
        payload += iov[i].iov_len;
    }
    if (overflow) {
        out.error = -EIO;
        out.len = sizeof(out);
        payload = 0;
    }
    memcpy(entry->header->in_out, &out, sizeof(out));
    entry->header->ent.payload_sz = (uint32_t)payload;
    entry->commit_id = out.unique;
    struct ring_queue *queue = entry->queue;
    pthread_mutex_lock(&queue->lock);
    entry->next = NULL;
    if (queue->commit_tail) queue->commit_tail->next = entry; else queue->commit_head = entry;
    queue->commit_tail = entry;
    pthread_mutex_unlock(&queue->lock);
    if (!queue->thread_started || !pthread_equal(pthread_self(), queue->thread)) wake(queue);
    pthread_rwlock_unlock(&registry_lock);
    return (ssize_t)total;
}

static struct io_uring_sqe *next_sqe(struct ring_queue *queue) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&queue->uring);
    if (sqe == NULL) {
        io_uring_submit(&queue->uring);
        sqe = io_uring_get_sqe(&queue->uring);
    }
    return sqe;
}

static int prepare_command(struct ring_queue *queue, struct ring_entry *entry, uint32_t op, uint64_t commit_id) {
    struct io_uring_sqe *sqe = next_sqe(queue);
    if (sqe == NULL) return -EBUSY;
    memset(sqe, 0, 2 * sizeof(*sqe)); // SQE128: the command area is the second half
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = queue->ring->device_fd;
    sqe->cmd_op = op;
    sqe->addr = (uint64_t)(uintptr_t)entry->iov;
    sqe->len = 2;
    struct ring_cmd_req *command = (struct ring_cmd_req *)sqe->cmd;
    command->qid = queue->qid;
    command->commit_id = commit_id;
    io_uring_sqe_set_data(sqe, entry);
    return 0;
}

static void arm_event(struct ring_queue *queue) {
    struct io_uring_sqe *sqe = next_sqe(queue);
    if (sqe == NULL) return;
    io_uring_prep_read(sqe, queue->event_fd, &queue->event_value, sizeof(queue->event_value), 0);
    io_uring_sqe_set_data(sqe, NULL);
}

/// A request arrived in `entry`: rebuild the /dev/fuse layout and let libfuse dispatch it.
static void dispatch(struct ring_queue *queue, struct ring_entry *entry) {
    struct cfusering *ring = queue->ring;
    struct ring_in_header in;
    memcpy(&in, entry->header->in_out, sizeof(in));
    uint32_t payload = entry->header->ent.payload_sz;
    // len covers the header and every in-argument: what is not payload is op_in.
    size_t fixed = sizeof(in) + (size_t)payload;
    if (payload > ring->payload_size || in.len < fixed || in.len - fixed > RING_OP_AREA || in.unique == 0) {
        struct ring_out_header out = {.len = sizeof(out), .error = -EIO, .unique = entry->header->ent.commit_id};
        atomic_store(&entry->awaiting, out.unique);
        struct iovec iov = {&out, sizeof(out)};
        route_reply(&iov, 1, ring->userdata);
        return;
    }
    size_t op_size = in.len - fixed;
    memcpy(entry->request, &in, sizeof(in));
    memcpy(entry->request + sizeof(in), entry->header->op_in, op_size);
    memcpy(entry->request + sizeof(in) + op_size, entry->payload, payload);
    atomic_fetch_add(&ring->requests, 1);
    atomic_store(&entry->awaiting, in.unique);
    struct fuse_buf buffer = {.size = in.len, .flags = 0, .mem = entry->request, .fd = -1, .pos = 0};
    fuse_session_process_buf(ring->session, &buffer);
}

static void commit_replies(struct ring_queue *queue) {
    pthread_mutex_lock(&queue->lock);
    struct ring_entry *entry = queue->commit_head;
    queue->commit_head = queue->commit_tail = NULL;
    pthread_mutex_unlock(&queue->lock);
    while (entry != NULL) {
        struct ring_entry *next = entry->next;
        if (prepare_command(queue, entry, RING_CMD_COMMIT_AND_FETCH, entry->commit_id) != 0) entry->dead = 1;
        entry = next;
    }
}

static void *queue_main(void *argument) {
    struct ring_queue *queue = argument;
    struct cfusering *ring = queue->ring;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    char name[16];
    snprintf(name, sizeof(name), "fuse-ring-%u", (unsigned)queue->qid);
    pthread_setname_np(pthread_self(), name);

    for (uint32_t e = 0; e < ring->depth; e++) {
        if (prepare_command(queue, &queue->entries[e], RING_CMD_REGISTER, 0) != 0) {
            fail(ring, EBUSY);
        }
    }
    arm_event(queue);
    int submitted = io_uring_submit(&queue->uring);
    if (submitted < 0) fail(ring, -submitted);
    // Registration errors complete at once; success completes only with a request.
    struct io_uring_cqe *cqe;
    int registration_failed = 0;
    while (io_uring_peek_cqe(&queue->uring, &cqe) == 0) {
        struct ring_entry *entry = io_uring_cqe_get_data(cqe);
        if (entry != NULL && cqe->res < 0) {
            fail(ring, -cqe->res);
            entry->dead = 1;
            registration_failed = 1;
        } else if (entry != NULL) {
            dispatch(queue, entry);
        } else if (!atomic_load(&ring->stopping)) {
            arm_event(queue);
        }
        io_uring_cqe_seen(&queue->uring, cqe);
    }
    if (!registration_failed && submitted >= 0
        && atomic_fetch_add(&ring->registered_queues, 1) + 1 == ring->queue_count) {
        int expected = CFUSERING_STARTING;
        atomic_compare_exchange_strong(&ring->state, &expected, CFUSERING_ACTIVE);
    }
    while (!atomic_load(&ring->stopping)) {
        commit_replies(queue);
        int result = io_uring_submit_and_wait(&queue->uring, 1);
        if (result < 0 && result != -EINTR && result != -EAGAIN && result != -EBUSY) {
            fail(ring, -result);
            break;
        }
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&queue->uring, head, cqe) {
            seen++;
            struct ring_entry *entry = io_uring_cqe_get_data(cqe);
            if (entry == NULL) {
                if (!atomic_load(&ring->stopping)) arm_event(queue);
            } else if (cqe->res == 0) {
                dispatch(queue, entry);
            } else {
                // -ENOTCONN/-ECONNABORTED once the connection ends; the entry is done.
                entry->dead = 1;
                if (atomic_load(&ring->state) != CFUSERING_ACTIVE) fail(ring, -cqe->res);
            }
        }
        io_uring_cq_advance(&queue->uring, seen);
    }
    atomic_store(&queue->thread_done, 1);
    return NULL;
}

static void init_replied(uint32_t max_write, uint32_t max_pages, void *userdata) {
    pthread_rwlock_rdlock(&registry_lock);
    struct cfusering *ring = find_ring(userdata);
    int expected = CFUSERING_WAITING_FOR_INIT;
    if (ring == NULL || !atomic_compare_exchange_strong(&ring->state, &expected, CFUSERING_STARTING)) {
        pthread_rwlock_unlock(&registry_lock);
        return;
    }
    // The kernel refuses payload buffers smaller than max(8 KiB, max_write, max_pages pages).
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = FUSE_MIN_READ_BUFFER;
    if (max_write > size) size = max_write;
    if ((size_t)(max_pages ? max_pages : 32) * page > size) size = (size_t)(max_pages ? max_pages : 32) * page;
    ring->payload_size = size;
    int error = 0;
    for (uint32_t q = 0; q < ring->queue_count && error == 0; q++) {
        struct ring_queue *queue = &ring->queues[q];
        for (uint32_t e = 0; e < ring->depth && error == 0; e++) {
            struct ring_entry *entry = &queue->entries[e];
            entry->queue = queue;
            if (posix_memalign((void **)&entry->header, 64, sizeof(struct ring_req_header)) != 0
                || posix_memalign((void **)&entry->payload, page, size) != 0
                || (entry->request = malloc(sizeof(struct ring_in_header) + RING_OP_AREA + size)) == NULL) {
                error = ENOMEM;
                break;
            }
            memset(entry->header, 0, sizeof(struct ring_req_header));
            entry->iov[0] = (struct iovec){entry->header, sizeof(struct ring_req_header)};
            entry->iov[1] = (struct iovec){entry->payload, size};
        }
        if (error) break;
        int result = io_uring_queue_init(2 * ring->depth + 8, &queue->uring, IORING_SETUP_SQE128);
        if (result < 0) { error = -result; break; }
        queue->uring_ready = 1;
    }
    for (uint32_t q = 0; q < ring->queue_count && error == 0; q++) {
        struct ring_queue *queue = &ring->queues[q];
        if (pthread_create(&queue->thread, NULL, queue_main, queue) != 0) { error = EAGAIN; break; }
        queue->thread_started = 1;
    }
    if (error) fail(ring, error);
    pthread_rwlock_unlock(&registry_lock);
}

static int wake_descriptor(void *userdata) {
    pthread_rwlock_rdlock(&registry_lock);
    struct cfusering *ring = find_ring(userdata);
    int descriptor = ring != NULL ? ring->exit_fd : -1;
    pthread_rwlock_unlock(&registry_lock);
    return descriptor;
}

void cfusering_wake_loop(struct cfusering *ring) {
    uint64_t one = 1;
    ssize_t ignored = write(ring->exit_fd, &one, sizeof(one));
    (void)ignored;
}

static const struct cfusept_ring_hooks hooks = {
    .route_reply = route_reply, .init_replied = init_replied, .wake_descriptor = wake_descriptor,
};

uint32_t cfusering_possible_cpus(void) {
    // /sys/devices/system/cpu/possible, e.g. "0-3": the kernel makes one queue per possible CPU.
    FILE *file = fopen("/sys/devices/system/cpu/possible", "re");
    unsigned first = 0, last = 0;
    uint32_t count = 0;
    if (file != NULL) {
        char text[256] = {0};
        if (fgets(text, sizeof(text), file) != NULL) {
            for (char *part = strtok(text, ",\n"); part != NULL; part = strtok(NULL, ",\n")) {
                int fields = sscanf(part, "%u-%u", &first, &last);
                if (fields == 1) count += 1;
                else if (fields == 2 && last >= first) count += last - first + 1;
            }
        }
        fclose(file);
    }
    if (count == 0) {
        long online = sysconf(_SC_NPROCESSORS_CONF);
        count = online > 0 ? (uint32_t)online : 1;
    }
    return count;
}

struct cfusering *cfusering_create(struct fuse_session *session, void *userdata, uint32_t depth) {
    struct cfusering *ring = calloc(1, sizeof(*ring));
    if (ring == NULL) return NULL;
    ring->session = session;
    ring->userdata = userdata;
    ring->device_fd = fuse_session_fd(session);
    ring->depth = depth == 0 ? 1 : depth;
    ring->queue_count = cfusering_possible_cpus();
    ring->queues = calloc(ring->queue_count, sizeof(struct ring_queue));
    ring->exit_fd = eventfd(0, EFD_CLOEXEC);
    if (ring->queues == NULL || ring->exit_fd < 0) {
        if (ring->exit_fd >= 0) close(ring->exit_fd);
        free(ring->queues);
        free(ring);
        return NULL;
    }
    for (uint32_t q = 0; q < ring->queue_count; q++) {
        struct ring_queue *queue = &ring->queues[q];
        queue->ring = ring;
        queue->qid = (uint16_t)q;
        queue->event_fd = eventfd(0, EFD_CLOEXEC);
        pthread_mutex_init(&queue->lock, NULL);
        queue->entries = calloc(ring->depth, sizeof(struct ring_entry));
        if (queue->entries == NULL || queue->event_fd < 0) {
            ring->queue_count = q + 1;
            cfusering_destroy(ring);
            return NULL;
        }
    }
    pthread_rwlock_wrlock(&registry_lock);
    ring->next_ring = registry;
    registry = ring;
    pthread_rwlock_unlock(&registry_lock);
    cfusept_set_ring_hooks(&hooks);
    return ring;
}

enum cfusering_state cfusering_state(const struct cfusering *ring) { return atomic_load(&ring->state); }
int cfusering_error(const struct cfusering *ring) { return atomic_load(&ring->error); }
uint32_t cfusering_queue_count(const struct cfusering *ring) { return ring->queue_count; }
uint64_t cfusering_request_count(const struct cfusering *ring) { return atomic_load(&ring->requests); }

static uint64_t now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
}

int cfusering_stop(struct cfusering *ring, uint32_t timeout_ms) {
    atomic_store(&ring->stopping, 1);
    // Replies from now on go to /dev/fuse (and fail there: the connection is gone).
    pthread_rwlock_wrlock(&registry_lock);
    pthread_rwlock_unlock(&registry_lock);
    uint64_t deadline = now_ms() + timeout_ms;
    int result = 0;
    for (uint32_t q = 0; q < ring->queue_count; q++) {
        struct ring_queue *queue = &ring->queues[q];
        if (!queue->thread_started) continue;
        wake(queue);
        while (!atomic_load(&queue->thread_done) && now_ms() < deadline) usleep(1000);
        if (!atomic_load(&queue->thread_done)) { result = -ETIMEDOUT; continue; }
        pthread_join(queue->thread, NULL);
        queue->thread_started = 0;
    }
    // Closing a ring cancels its commands still waiting in the kernel (IO_URING_F_CANCEL).
    for (uint32_t q = 0; q < ring->queue_count; q++) {
        struct ring_queue *queue = &ring->queues[q];
        if (queue->uring_ready && !queue->thread_started) {
            io_uring_queue_exit(&queue->uring);
            queue->uring_ready = 0;
        }
    }
    int state = atomic_load(&ring->state);
    if (result == 0 && state != CFUSERING_FAILED) atomic_store(&ring->state, CFUSERING_STOPPED);
    return result;
}

void cfusering_destroy(struct cfusering *ring) {
    if (ring == NULL) return;
    for (uint32_t q = 0; q < ring->queue_count; q++) {
        if (ring->queues[q].thread_started) return; // still running: leak rather than free under it
    }
    pthread_rwlock_wrlock(&registry_lock);
    for (struct cfusering **link = &registry; *link != NULL; link = &(*link)->next_ring) {
        if (*link == ring) { *link = ring->next_ring; break; }
    }
    int empty = registry == NULL;
    pthread_rwlock_unlock(&registry_lock);
    if (empty) cfusept_set_ring_hooks(NULL);
    for (uint32_t q = 0; q < ring->queue_count; q++) {
        struct ring_queue *queue = &ring->queues[q];
        if (queue->uring_ready) io_uring_queue_exit(&queue->uring);
        if (queue->event_fd >= 0) close(queue->event_fd);
        pthread_mutex_destroy(&queue->lock);
        for (uint32_t e = 0; queue->entries != NULL && e < ring->depth; e++) {
            free(queue->entries[e].header);
            free(queue->entries[e].payload);
            free(queue->entries[e].request);
        }
        free(queue->entries);
    }
    free(ring->queues);
    close(ring->exit_fd);
    free(ring);
}
