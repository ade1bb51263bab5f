// floorfs: the floor under W2 for any FUSE filesystem that must see every open.
//
// A read-only mirror of one flat directory on libfuse 3.14 (the library ODRFS mounts with),
// configured as ODRFS is (multithreaded loop with clone_fd and 10 idle workers, splice
// replies, kept page cache, a day of entry and attribute timeouts) but doing no work at all:
// each file's descriptor is opened at start-up, OPEN only answers with it and RELEASE only
// answers. A warm level load through it costs exactly the kernel's two round trips per file
// (OPEN, and RELEASE after close) that ODRFS's contract requires (every open is an access and
// retains its pack until release), so W2 through ODRFS cannot be faster than W2 through this.
//
//   floorfs SOURCE-DIR MOUNTPOINT     (stays in the foreground; unmount with fusermount3 -u)
#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILES 100000
#define DAY 86400.0

static char *names[MAX_FILES];
static int descriptors[MAX_FILES];
static struct stat stats[MAX_FILES];
static int count;

static void attributes(fuse_ino_t ino, struct stat *out) {
    if (ino == FUSE_ROOT_ID) {
        memset(out, 0, sizeof *out);
        out->st_mode = S_IFDIR | 0755;
        out->st_nlink = 2;
    } else {
        *out = stats[ino - 2];
    }
    out->st_ino = ino;
}

static void do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
    for (int i = 0; parent == FUSE_ROOT_ID && i < count; i++) {
        if (strcmp(names[i], name) == 0) {
            struct fuse_entry_param entry = {.ino = (fuse_ino_t)i + 2, .attr_timeout = DAY, .entry_timeout = DAY};
            attributes(entry.ino, &entry.attr);
            fuse_reply_entry(req, &entry);
            return;
        }
    }
    fuse_reply_err(req, ENOENT);
}

static void do_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)fi;
    struct stat st;
    attributes(ino, &st);
    fuse_reply_attr(req, &st, DAY);
}

static void do_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    if (ino == FUSE_ROOT_ID) { fuse_reply_err(req, EISDIR); return; }
    fi->fh = (uint64_t)descriptors[ino - 2];
    fi->keep_cache = 1;
    fuse_reply_open(req, fi);
}

static void do_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)ino; (void)fi;
    fuse_reply_err(req, 0);
}

static void do_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, struct fuse_file_info *fi) {
    (void)ino;
    struct fuse_bufvec buffer = FUSE_BUFVEC_INIT(size);
    buffer.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    buffer.buf[0].fd = (int)fi->fh;
    buffer.buf[0].pos = offset;
    fuse_reply_data(req, &buffer, FUSE_BUF_SPLICE_MOVE);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t offset, struct fuse_file_info *fi) {
    (void)ino; (void)fi;
    char *listing = malloc(size);
    if (listing == NULL) { fuse_reply_err(req, ENOMEM); return; }
    size_t used = 0;
    for (off_t i = offset; i < count; i++) {
        struct stat st;
        attributes((fuse_ino_t)i + 2, &st);
        size_t length = fuse_add_direntry(req, listing + used, size - used, names[i], &st, i + 1);
        if (length > size - used) break;
        used += length;
    }
    fuse_reply_buf(req, listing, used);
    free(listing);
}

static void do_init(void *userdata, struct fuse_conn_info *connection) {
    (void)userdata;
    connection->want |= FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE;
    connection->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
}

static const struct fuse_lowlevel_ops operations = {
    .init = do_init, .lookup = do_lookup, .getattr = do_getattr, .open = do_open,
    .release = do_release, .read = do_read, .readdir = do_readdir,
};

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: floorfs SOURCE-DIR MOUNTPOINT\n"); return 2; }
    int source = open(argv[1], O_RDONLY | O_DIRECTORY);
    DIR *directory = source < 0 ? NULL : fdopendir(source);
    if (directory == NULL) { perror(argv[1]); return 1; }
    struct dirent *dirent;
    while ((dirent = readdir(directory)) != NULL && count < MAX_FILES) {
        if (dirent->d_name[0] == '.') continue;
        int fd = openat(source, dirent->d_name, O_RDONLY);
        if (fd < 0 || fstat(fd, &stats[count]) != 0 || !S_ISREG(stats[count].st_mode)) {
            if (fd >= 0) close(fd);
            continue;
        }
        names[count] = strdup(dirent->d_name);
        descriptors[count++] = fd;
    }
    char *arguments[] = {argv[0], "-o", "ro,default_permissions,fsname=floorfs", NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, arguments);
    struct fuse_session *session = fuse_session_new(&args, &operations, sizeof operations, NULL);
    if (session == NULL || fuse_set_signal_handlers(session) != 0 || fuse_session_mount(session, argv[2]) != 0) return 1;
    struct fuse_loop_config *loop = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(loop, 1);
    fuse_loop_cfg_set_idle_threads(loop, 10);
    int result = fuse_session_loop_mt(session, loop);
    fuse_loop_cfg_destroy(loop);
    fuse_session_unmount(session);
    fuse_remove_signal_handlers(session);
    fuse_session_destroy(session);
    return result == 0 ? 0 : 1;
}
