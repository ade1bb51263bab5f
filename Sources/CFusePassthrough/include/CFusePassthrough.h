#ifndef CFUSE_PASSTHROUGH_H
#define CFUSE_PASSTHROUGH_H
// FUSE passthrough (kernel protocol 7.40, Linux 6.9+) on top of libfuse 3.14,
// which predates it. libfuse 3.14 lets a session replace its /dev/fuse reads and
// writes (`fuse_session_custom_io`); these hooks do the plain syscalls and patch
// the two replies passthrough needs: INIT (FUSE_INIT_EXT, FUSE_PASSTHROUGH in
// flags2, max_stack_depth) and OPEN (FOPEN_PASSTHROUGH, backing_id). Everything
// else is libfuse's. The few kernel definitions used are in the .c file, taken
// from include/uapi/linux/fuse.h (this system's linux/fuse.h is older).
//
// State that links a request to its reply is thread-local: libfuse answers INIT
// on the thread that read it, and fuse_reply_open writes on the calling thread.
#include <stdint.h>

struct fuse_session;

/// Installs the hooks on a session that `fuse_session_mount` has just mounted,
/// keeping its /dev/fuse descriptor. 0, or -1 if libfuse refused.
int cfusept_install(struct fuse_session *session);

/// Inside libfuse's `init` callback: 1 if the INIT being answered on this thread
/// offered FUSE_PASSTHROUGH (with FUSE_INIT_EXT), else 0.
int cfusept_init_offered(void);

/// Inside libfuse's `init` callback: the INIT reply sent next on this thread asks
/// for passthrough, with backing files at most `max_stack_depth` filesystems deep.
void cfusept_init_accept(uint32_t max_stack_depth);

/// Inside libfuse's `init` callback: 1 if the INIT being answered on this thread
/// offered FUSE_OVER_IO_URING (with FUSE_INIT_EXT; the module parameter
/// fuse.enable_uring was Y when the kernel sent it), else 0.
int cfusept_init_uring_offered(void);

/// Inside libfuse's `init` callback: the INIT reply sent next on this thread asks
/// for FUSE over io_uring; after it is written, `init_replied` of the installed
/// ring hooks is called on this thread.
void cfusept_init_accept_uring(void);

/// The transport under libfuse for FUSE over io_uring (CFuseRing): every read of
/// /dev/fuse also waits on `wake_descriptor`, and every reply is
/// first offered to `route_reply`, which returns the bytes it took (the reply
/// belonged to a request that came through a ring entry) or -1 (send it to
/// /dev/fuse). `init_replied` gets the negotiated max_write and max_pages (0 if
/// the reply did not set them) once the INIT reply that asked for io_uring is written.
/// Both get the session's userdata (`fuse_req_userdata`), which tells sessions apart.
#include <sys/types.h>
struct iovec;
struct cfusept_ring_hooks {
    ssize_t (*route_reply)(const struct iovec *iov, int count, void *session_userdata);
    void (*init_replied)(uint32_t max_write, uint32_t max_pages, void *session_userdata);
    /// A descriptor that becomes readable when the session's loop should look at its
    /// exit flag (reads of /dev/fuse then fail with EINTR), or -1 for plain reads.
    int (*wake_descriptor)(void *session_userdata);
};

/// Installs (or with NULL removes) the ring hooks; they must stay valid while installed.
void cfusept_set_ring_hooks(const struct cfusept_ring_hooks *hooks);

/// The next open reply written on this thread carries FOPEN_PASSTHROUGH and
/// `backing_id`; 0 clears. Set just before `fuse_reply_open`, cleared after.
void cfusept_set_open_backing(int32_t backing_id);

/// FUSE_DEV_IOC_BACKING_OPEN on the session's device: the new backing id (> 0),
/// or -errno (EPERM without CAP_SYS_ADMIN or without negotiated passthrough).
int32_t cfusept_backing_open(int device_fd, int file_fd);

/// FUSE_DEV_IOC_BACKING_CLOSE: 0 or -errno.
int cfusept_backing_close(int device_fd, int32_t backing_id);

#endif
