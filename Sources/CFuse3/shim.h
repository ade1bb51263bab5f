#ifndef CFUSE3_SHIM_H
#define CFUSE3_SHIM_H
// A system-library target has no cSettings, so the API version is pinned here,
// before the first libfuse header is seen. 312 is the first version whose
// session loop takes the opaque `fuse_loop_config` (with max_threads).
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stddef.h>

// Swift imports nothing that is a function-like macro, and libfuse maps several
// public names onto versioned symbols with macros depending on the build
// (`LIBFUSE_BUILT_WITH_VERSIONED_SYMBOLS`, FUSE_USE_VERSION). Calling these
// prefixed shims instead keeps FUSEKit compiling whichever way a distribution
// builds libfuse 3.12+.

/// `fuse_session_new`: a macro over `fuse_session_new_317`/`_30` in newer
/// libfuse releases; a plain function in 3.14.
static inline struct fuse_session *cfuse3_session_new(struct fuse_args *args,
                                                      const struct fuse_lowlevel_ops *ops,
                                                      size_t ops_size,
                                                      void *userdata) {
    return fuse_session_new(args, ops, ops_size, userdata);
}

/// `fuse_session_loop_mt`: a macro for `fuse_session_loop_mt_312` when libfuse
/// is built without versioned symbols.
static inline int cfuse3_session_loop_mt(struct fuse_session *se,
                                         struct fuse_loop_config *config) {
    return fuse_session_loop_mt(se, config);
}

/// `FUSE_BUFVEC_INIT` is a compound-literal macro; this fills a one-buffer
/// vector backed by a file descriptor read at `pos` (splice-capable).
static inline struct fuse_bufvec cfuse3_fd_bufvec(int fd, off_t pos, size_t size) {
    struct fuse_bufvec vec = FUSE_BUFVEC_INIT(size);
    vec.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    vec.buf[0].fd = fd;
    vec.buf[0].pos = pos;
    return vec;
}

// FUSEKit relies on these layouts: the bit-fields of fuse_file_info are set via
// Swift's imported accessors, `fh` must be a full 64-bit handle, `fuse_ino_t`
// must carry a 64-bit inode, and fuse_lowlevel_ops is passed with its C size.
_Static_assert(sizeof(fuse_ino_t) == 8, "FUSEKit maps InodeNumber onto a 64-bit fuse_ino_t");
_Static_assert(sizeof(((struct fuse_file_info *)0)->fh) == 8, "FileHandleID is 64 bits");
_Static_assert(sizeof(off_t) == 8, "offsets are Int64 in FUSEKit (needs _FILE_OFFSET_BITS=64 on 32-bit)");
_Static_assert(offsetof(struct fuse_file_info, fh) == 16, "fuse_file_info layout changed");

#endif
