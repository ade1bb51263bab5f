#define _GNU_SOURCE
#define FUSE_USE_VERSION 312
#include "fuse_ring_internal.h"

#include <CFusePassthrough.h>
#include <errno.h>
#include <fuse3/fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

// Rings of sessions: creation, the registry the I/O hooks search, start at INIT, stop.
pthread_rwlock_t cfusering_registry_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct cfusering *registry;

void cfusering_fail(struct cfusering *ring, int error) {
    int expected = 0;
    atomic_compare_exchange_strong(&ring->error, &expected, error);
    int state = atomic_load(&ring->state);
    if (state == CFUSERING_WAITING_FOR_INIT || state == CFUSERING_STARTING) {
        atomic_store(&ring->state, CFUSERING_FAILED);
    }
}

struct cfusering *cfusering_find(void *userdata) {
    for (struct cfusering *ring = registry; ring != NULL; ring = ring->next_ring) {
        if (ring->userdata == userdata) return ring;
    }
    return NULL;
}

static void init_replied(uint32_t max_write, uint32_t max_pages, void *userdata) {
    pthread_rwlock_rdlock(&cfusering_registry_lock);
    struct cfusering *ring = cfusering_find(userdata);
    int expected = CFUSERING_WAITING_FOR_INIT;
    if (ring == NULL || !atomic_compare_exchange_strong(&ring->state, &expected, CFUSERING_STARTING)) {
        pthread_rwlock_unlock(&cfusering_registry_lock);
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
        if (pthread_create(&queue->thread, NULL, cfusering_queue_main, queue) != 0) { error = EAGAIN; break; }
        queue->thread_started = 1;
    }
    if (error) cfusering_fail(ring, error);
    pthread_rwlock_unlock(&cfusering_registry_lock);
}

static int wake_descriptor(void *userdata) {
    pthread_rwlock_rdlock(&cfusering_registry_lock);
    struct cfusering *ring = cfusering_find(userdata);
    int descriptor = ring != NULL ? ring->exit_fd : -1;
    pthread_rwlock_unlock(&cfusering_registry_lock);
    return descriptor;
}

void cfusering_wake_loop(struct cfusering *ring) {
    uint64_t one = 1;
    ssize_t ignored = write(ring->exit_fd, &one, sizeof(one));
    (void)ignored;
}

static const struct cfusept_ring_hooks hooks = {
    .route_reply = cfusering_route_reply, .init_replied = init_replied, .wake_descriptor = wake_descriptor,
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
    pthread_rwlock_wrlock(&cfusering_registry_lock);
    ring->next_ring = registry;
    registry = ring;
    pthread_rwlock_unlock(&cfusering_registry_lock);
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
    pthread_rwlock_wrlock(&cfusering_registry_lock);
    pthread_rwlock_unlock(&cfusering_registry_lock);
    uint64_t deadline = now_ms() + timeout_ms;
    int result = 0;
    for (uint32_t q = 0; q < ring->queue_count; q++) {
        struct ring_queue *queue = &ring->queues[q];
        if (!queue->thread_started) continue;
        cfusering_wake_queue(queue);
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
    pthread_rwlock_wrlock(&cfusering_registry_lock);
    for (struct cfusering **link = &registry; *link != NULL; link = &(*link)->next_ring) {
        if (*link == ring) { *link = ring->next_ring; break; }
    }
    int empty = registry == NULL;
    pthread_rwlock_unlock(&cfusering_registry_lock);
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
