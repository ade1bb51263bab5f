// Forks the `odrfs mount` daemon before Swift's `main` runs.
//
// Why here: a process must not fork once it has threads, and a Swift program has them
// before its first line runs (on Linux the async main runs on a Dispatch worker thread,
// which starts others). Re-executing the binary instead (posix_spawn) costs a second
// process start: loading the Swift runtime and every library again, about 10 ms of the
// 50 ms the local part of a mount may take (issue 27). A constructor runs before any of
// that, with one thread: the child is a clean copy that goes on into `main` as the daemon,
// the parent goes on into `main` only to wait for the child's word on a pipe.
//
// Only for `odrfs mount` in the background: not with `--foreground` (systemd's unit, and a
// daemon that was spawned: `--ready-fd`), `--help` or `--version`, and not when
// ODRFS_NO_EARLY_FORK is set (then `odrfs mount` spawns its daemon as before). Nothing
// else is decided here: the daemon parses its arguments itself, and an error in them is
// printed by it, on the terminal it still shares, and passed on as the parent's exit status.

#define _GNU_SOURCE
#include "CEarlyFork.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int waiter_descriptor = -1;
static pid_t daemon_pid = 0;
static int ready_descriptor = -1;

int odrfs_early_fork_waiter_descriptor(void) { return waiter_descriptor; }
pid_t odrfs_early_fork_daemon_pid(void) { return daemon_pid; }
int odrfs_early_fork_ready_descriptor(void) { return ready_descriptor; }

/// Whether the command line (from /proc/self/cmdline: constructor arguments are a glibc
/// extension) asks for a background `odrfs mount`. A command line too long for the buffer
/// counts as no: the daemon is then spawned.
static int wants_background_mount(void) {
    static char text[65536];
    int descriptor = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return 0;
    size_t length = 0;
    for (;;) {
        ssize_t count = read(descriptor, text + length, sizeof text - 1 - length);
        if (count <= 0) break;
        length += (size_t)count;
        if (length == sizeof text - 1) {
            close(descriptor);
            return 0;
        }
    }
    close(descriptor);
    text[length] = '\0';
    // Arguments are NUL-separated; argv[0] first.
    const char *end = text + length;
    const char *argument = text + strlen(text) + 1;
    if (argument >= end || strcmp(argument, "mount") != 0) return 0;
    for (argument += strlen(argument) + 1; argument < end; argument += strlen(argument) + 1) {
        if (strcmp(argument, "--") == 0) break;
        if (strcmp(argument, "--foreground") == 0 || strncmp(argument, "--ready-fd", 10) == 0
            || strncmp(argument, "--configuration-fd", 18) == 0 || strcmp(argument, "-h") == 0
            || strcmp(argument, "--help") == 0 || strcmp(argument, "--help-hidden") == 0
            || strcmp(argument, "--version") == 0 || strncmp(argument, "--experimental-", 15) == 0) {
            return 0;
        }
    }
    return 1;
}

/// Opens /dev/null on each of descriptors 0, 1 and 2 that the caller left closed. Otherwise
/// the pipe, or a descriptor the runtime opens later (Dispatch's epoll), would take one of
/// those numbers, and the daemon's redirection of its stdio onto them would close it.
static int fill_standard_descriptors(void) {
    for (int standard = 0; standard <= 2; standard++) {
        if (fcntl(standard, F_GETFD) >= 0) continue;
        int descriptor = open("/dev/null", O_RDWR);
        if (descriptor < 0) return 0;
        if (descriptor != standard) {
            close(descriptor);
            return 0;
        }
    }
    return 1;
}

/// Whether this process has exactly one thread (/proc/self/stat's 20th field): a library's
/// constructor could have started one before this runs. Unknown counts as no.
static int is_single_threaded(void) {
    int descriptor = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return 0;
    char text[1024];
    ssize_t count = read(descriptor, text, sizeof text - 1);
    close(descriptor);
    if (count <= 0) return 0;
    text[count] = '\0';
    // The command name (field 2) may hold spaces and parentheses: count from its last ')'.
    char *field = strrchr(text, ')');
    if (field == NULL) return 0;
    for (int index = 2; index < 20; index++) {
        field = strchr(field + 1, ' ');
        if (field == NULL) return 0;
    }
    return strtol(field + 1, NULL, 10) == 1;
}

__attribute__((constructor)) static void odrfs_early_fork(void) {
    if (getenv("ODRFS_NO_EARLY_FORK") != NULL || !wants_background_mount() || !is_single_threaded()
        || !fill_standard_descriptors()) {
        return;
    }
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) return;  // `odrfs mount` spawns its daemon instead
    pid_t pid = fork();
    if (pid < 0) {
        close(ends[0]);
        close(ends[1]);
        return;
    }
    if (pid == 0) {
        close(ends[0]);
        ready_descriptor = ends[1];
        // As posix_spawn did: default dispositions (libfuse installs its handlers only over
        // SIG_DFL; a script may have left SIGINT ignored) and nothing blocked.
        int defaults[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
        for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) signal(defaults[i], SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        return;
    }
    close(ends[1]);
    waiter_descriptor = ends[0];
    daemon_pid = pid;
    // The parent reaps the daemon for its exit status: a SIGCHLD ignored by whoever started
    // this process (it survives exec) would make waitpid fail and the status read as 0.
    signal(SIGCHLD, SIG_DFL);
}
