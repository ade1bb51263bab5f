#define _GNU_SOURCE
#define FUSE_USE_VERSION 312
#include "fuse_ring_internal.h"

#include <errno.h>
#include <fuse3/fuse_lowlevel.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

// A queue's thread and the reply path into its entries (see CFuseRing.h).
void cfusering_wake_queue(struct ring_queue *queue) {
    uint64_t one = 1;
    ssize_t ignored = write(queue->event_fd, &one, sizeof(one));
    (void)ignored;
}

/// Puts a reply into the entry that carried its request; the queue's thread commits it.
ssize_t cfusering_route_reply(const struct iovec *iov, int count, void *userdata) {
    if (count < 1 || iov[0].iov_len != sizeof(struct ring_out_header)) return -1;
    struct ring_out_header out;
    memcpy(&out, iov[0].iov_base, sizeof(out));
    if (out.unique == 0) return -1; // a notification: /dev/fuse only
    pthread_rwlock_rdlock(&cfusering_registry_lock);
    struct cfusering *ring = cfusering_find(userdata);
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
        pthread_rwlock_unlock(&cfusering_registry_lock);
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
    if (!queue->thread_started || !pthread_equal(pthread_self(), queue->thread)) cfusering_wake_queue(queue);
    pthread_rwlock_unlock(&cfusering_registry_lock);
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
        cfusering_route_reply(&iov, 1, ring->userdata);
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

void *cfusering_queue_main(void *argument) {
    struct ring_queue *queue = argument;
    struct cfusering *ring = queue->ring;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    char name[16];
    snprintf(name, sizeof(name), "fuse-ring-%u", (unsigned)queue->qid);
    pthread_setname_np(pthread_self(), name);
    // The kernel queues a request on the ring of the CPU its caller runs on. Pinning the
    // queue's thread to that CPU turns the wake-up for each request, and the caller's wake-up
    // by the reply, into local context switches instead of cross-CPU wake-ups (an IPI, and in
    // a VM a halted vCPU to wake). Best effort: a CPU outside the allowed set (cpuset) leaves
    // the thread unpinned, as before.
    cpu_set_t own_cpu;
    CPU_ZERO(&own_cpu);
    CPU_SET(queue->qid, &own_cpu);
    (void)pthread_setaffinity_np(pthread_self(), sizeof(own_cpu), &own_cpu);

    for (uint32_t e = 0; e < ring->depth; e++) {
        if (prepare_command(queue, &queue->entries[e], RING_CMD_REGISTER, 0) != 0) {
            cfusering_fail(ring, EBUSY);
        }
    }
    arm_event(queue);
    int submitted = io_uring_submit(&queue->uring);
    if (submitted < 0) cfusering_fail(ring, -submitted);
    // Registration errors complete at once; success completes only with a request.
    struct io_uring_cqe *cqe;
    int registration_failed = 0;
    while (io_uring_peek_cqe(&queue->uring, &cqe) == 0) {
        struct ring_entry *entry = io_uring_cqe_get_data(cqe);
        if (entry != NULL && cqe->res < 0) {
            cfusering_fail(ring, -cqe->res);
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
            cfusering_fail(ring, -result);
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
                if (atomic_load(&ring->state) != CFUSERING_ACTIVE) cfusering_fail(ring, -cqe->res);
            }
        }
        io_uring_cq_advance(&queue->uring, seen);
    }
    atomic_store(&queue->thread_done, 1);
    return NULL;
}
