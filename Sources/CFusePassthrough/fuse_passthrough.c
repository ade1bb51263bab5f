#define _GNU_SOURCE
#define FUSE_USE_VERSION 312
#include "CFusePassthrough.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse3/fuse_lowlevel.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

// Kernel protocol, from include/uapi/linux/fuse.h (7.40).
enum { KERNEL_OPCODE_INIT = 26 };
#define KERNEL_INIT_EXT (1u << 30)
#define KERNEL_WRITEBACK_CACHE (1u << 16)
// FUSE_PASSTHROUGH is bit 37 of the 64-bit flags: bit 5 of flags2.
#define KERNEL_PASSTHROUGH_FLAGS2 (1u << 5)
#define KERNEL_FOPEN_PASSTHROUGH (1u << 7)
// FUSE_OVER_IO_URING is bit 41 of the 64-bit flags: bit 9 of flags2.
#define KERNEL_OVER_IO_URING_FLAGS2 (1u << 9)
#define KERNEL_MAX_PAGES (1u << 22)
// FOPEN_DIRECT_IO | FOPEN_NOFLUSH | FOPEN_PARALLEL_DIRECT_WRITES (FOPEN_PASSTHROUGH_MASK).
#define KERNEL_FOPEN_PASSTHROUGH_COMPATIBLE ((1u << 0) | (1u << 5) | (1u << 6))

struct kernel_in_header {
    uint32_t len, opcode;
    uint64_t unique, nodeid;
    uint32_t uid, gid, pid;
    uint16_t total_extlen, padding;
};
struct kernel_out_header {
    uint32_t len;
    int32_t error;
    uint64_t unique;
};
// The leading fields of fuse_init_in / fuse_init_out that are read or patched.
struct kernel_init_in_head {
    uint32_t major, minor, max_readahead, flags, flags2;
};
struct kernel_init_out {
    uint32_t major, minor, max_readahead, flags;
    uint16_t max_background, congestion_threshold;
    uint32_t max_write, time_gran;
    uint16_t max_pages, map_alignment;
    uint32_t flags2, max_stack_depth;
    uint32_t unused[6];
};
struct kernel_open_out {
    uint64_t fh;
    uint32_t open_flags;
    int32_t backing_id;
};
struct kernel_backing_map {
    int32_t fd;
    uint32_t flags;
    uint64_t padding;
};
#define KERNEL_DEV_IOC_BACKING_OPEN _IOW(229, 1, struct kernel_backing_map)
#define KERNEL_DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

_Static_assert(sizeof(struct kernel_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct kernel_out_header) == 16, "fuse_out_header");
_Static_assert(sizeof(struct kernel_init_out) == 64, "fuse_init_out");
_Static_assert(sizeof(struct kernel_open_out) == 16, "fuse_open_out");
_Static_assert(sizeof(struct kernel_backing_map) == 16, "fuse_backing_map");

struct init_state {
    uint64_t unique;
    int pending;        // this thread read an INIT and has not answered it yet
    int offered;        // ... and the kernel offered passthrough
    uint32_t accepted;  // max_stack_depth to ask for; 0 = leave the reply alone
    int uring_offered;  // the kernel offered FUSE_OVER_IO_URING
    int uring_accepted; // ... and the INIT reply asks for it
};
static __thread struct init_state thread_init;
static __thread int32_t thread_open_backing;

static const struct cfusept_ring_hooks *ring_hooks;

/// With a ring, ordinary requests no longer come through /dev/fuse, so nothing would
/// wake libfuse's workers when the session exits: they also wait on the ring's wake
/// descriptor, and report EINTR when it fires (libfuse then sees the exit flag).
static int wait_readable(int fd, void *userdata) {
    const struct cfusept_ring_hooks *hooks = __atomic_load_n(&ring_hooks, __ATOMIC_ACQUIRE);
    int wake = hooks != NULL ? hooks->wake_descriptor(userdata) : -1;
    if (wake < 0) return 0;
    struct pollfd fds[2] = {{.fd = fd, .events = POLLIN}, {.fd = wake, .events = POLLIN}};
    for (;;) {
        int ready = poll(fds, 2, -1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return 0; // let read report it
        if (fds[0].revents != 0) return 0;
        if (fds[1].revents != 0) { errno = EINTR; return -1; }
    }
}

static ssize_t hook_read(int fd, void *buffer, size_t length, void *userdata) {
    if (wait_readable(fd, userdata) < 0) return -1;
    ssize_t result = read(fd, buffer, length);
    if (result >= (ssize_t)(sizeof(struct kernel_in_header) + sizeof(struct kernel_init_in_head))) {
        const struct kernel_in_header *header = buffer;
        if (header->opcode == KERNEL_OPCODE_INIT) {
            struct kernel_init_in_head init;
            memcpy(&init, (const char *)buffer + sizeof(*header), sizeof(init));
            thread_init.unique = header->unique;
            thread_init.pending = 1;
            thread_init.offered = init.major == 7 && (init.flags & KERNEL_INIT_EXT) && (init.flags2 & KERNEL_PASSTHROUGH_FLAGS2);
            thread_init.accepted = 0;
            thread_init.uring_offered = init.major == 7 && (init.flags & KERNEL_INIT_EXT) && (init.flags2 & KERNEL_OVER_IO_URING_FLAGS2);
            thread_init.uring_accepted = 0;
        }
    }
    return result;
}

/// Sends a reply: to the io_uring entry that carried its request, if any, else to /dev/fuse.
static ssize_t deliver(int fd, struct iovec *iov, int count, void *userdata) {
    const struct cfusept_ring_hooks *hooks = __atomic_load_n(&ring_hooks, __ATOMIC_ACQUIRE);
    if (hooks != NULL) {
        ssize_t routed = hooks->route_reply(iov, count, userdata);
        if (routed >= 0) {
            return routed;
        }
    }
    return writev(fd, iov, count);
}

/// Sends the reply with its payload (everything after the header, which libfuse
/// passes as iov[1]) replaced by `payload`; the length stays the same.
static ssize_t write_patched(int fd, struct iovec *iov, int count, void *payload, size_t payload_length, void *userdata) {
    struct iovec patched[2] = {iov[0], {payload, payload_length}};
    (void)count;
    return deliver(fd, patched, 2, userdata);
}

static ssize_t hook_writev(int fd, struct iovec *iov, int count, void *userdata) {
    int32_t backing = thread_open_backing;
    int init_pending = thread_init.pending && (thread_init.accepted || thread_init.uring_accepted);
    if ((backing == 0 && !init_pending) || count != 2 || iov[0].iov_len != sizeof(struct kernel_out_header)) {
        return deliver(fd, iov, count, userdata);
    }
    struct kernel_out_header header;
    memcpy(&header, iov[0].iov_base, sizeof(header));
    if (backing != 0 && header.error == 0 && iov[1].iov_len == sizeof(struct kernel_open_out)) {
        struct kernel_open_out open_out;
        memcpy(&open_out, iov[1].iov_base, sizeof(open_out));
        // The only flags the kernel accepts together with passthrough.
        open_out.open_flags &= KERNEL_FOPEN_PASSTHROUGH_COMPATIBLE;
        open_out.open_flags |= KERNEL_FOPEN_PASSTHROUGH;
        open_out.backing_id = backing;
        thread_open_backing = 0;
        return write_patched(fd, iov, count, &open_out, sizeof(open_out), userdata);
    }
    if (init_pending && header.unique == thread_init.unique && header.error == 0
        && iov[1].iov_len == sizeof(struct kernel_init_out)) {
        struct kernel_init_out init_out;
        memcpy(&init_out, iov[1].iov_base, sizeof(init_out));
        thread_init.pending = 0;
        // The kernel refuses passthrough together with writeback caching.
        if (thread_init.accepted && !(init_out.flags & KERNEL_WRITEBACK_CACHE)) {
            init_out.flags |= KERNEL_INIT_EXT;
            init_out.flags2 |= KERNEL_PASSTHROUGH_FLAGS2;
            init_out.max_stack_depth = thread_init.accepted;
        }
        int uring = thread_init.uring_accepted;
        if (uring) {
            init_out.flags |= KERNEL_INIT_EXT;
            init_out.flags2 |= KERNEL_OVER_IO_URING_FLAGS2;
        }
        ssize_t written = write_patched(fd, iov, count, &init_out, sizeof(init_out), userdata);
        const struct cfusept_ring_hooks *hooks = __atomic_load_n(&ring_hooks, __ATOMIC_ACQUIRE);
        // The kernel has processed the reply when the write returns: the connection is
        // initialised and ring entries may now be registered.
        if (uring && written >= 0 && hooks != NULL) {
            uint32_t max_pages = (init_out.flags & KERNEL_MAX_PAGES) ? init_out.max_pages : 0;
            hooks->init_replied(init_out.max_write, max_pages, userdata);
        }
        return written;
    }
    return deliver(fd, iov, count, userdata);
}

static ssize_t hook_splice_send(int fd_in, off_t *offset_in, int fd_out, off_t *offset_out,
                                size_t length, unsigned int flags, void *userdata) {
    (void)userdata;
    return splice(fd_in, offset_in, fd_out, offset_out, length, flags);
}

int cfusept_install(struct fuse_session *session) {
    // No splice_receive: libfuse then reads every request with hook_read (it
    // would splice only write payloads, which a read-only filesystem never gets).
    static const struct fuse_custom_io hooks = {
        .writev = hook_writev,
        .read = hook_read,
        .splice_receive = NULL,
        .splice_send = hook_splice_send,
    };
    return fuse_session_custom_io(session, &hooks, fuse_session_fd(session)) == 0 ? 0 : -1;
}

int cfusept_init_offered(void) {
    return thread_init.pending && thread_init.offered;
}

void cfusept_init_accept(uint32_t max_stack_depth) {
    if (thread_init.pending && thread_init.offered) {
        thread_init.accepted = max_stack_depth;
    }
}

int cfusept_init_uring_offered(void) {
    return thread_init.pending && thread_init.uring_offered;
}

void cfusept_init_accept_uring(void) {
    if (thread_init.pending && thread_init.uring_offered) {
        thread_init.uring_accepted = 1;
    }
}

void cfusept_set_ring_hooks(const struct cfusept_ring_hooks *hooks) {
    __atomic_store_n(&ring_hooks, hooks, __ATOMIC_RELEASE);
}

void cfusept_set_open_backing(int32_t backing_id) {
    thread_open_backing = backing_id;
}

int32_t cfusept_backing_open(int device_fd, int file_fd) {
    struct kernel_backing_map map = {.fd = file_fd, .flags = 0, .padding = 0};
    int result = ioctl(device_fd, KERNEL_DEV_IOC_BACKING_OPEN, &map);
    return result < 0 ? -errno : result;
}

int cfusept_backing_close(int device_fd, int32_t backing_id) {
    uint32_t id = (uint32_t)backing_id;
    return ioctl(device_fd, KERNEL_DEV_IOC_BACKING_CLOSE, &id) < 0 ? -errno : 0;
}
