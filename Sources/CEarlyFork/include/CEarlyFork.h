#ifndef CEARLYFORK_H
#define CEARLYFORK_H

#include <sys/types.h>

/// `odrfs mount` without `--foreground` forks its daemon before `main`, while the process
/// still has one thread (see EarlyFork.c). These say which side of that fork this process is.

/// In the waiting parent: the pipe's read end on which the daemon reports, else -1.
int odrfs_early_fork_waiter_descriptor(void);
/// In the waiting parent: the daemon's pid, else 0.
pid_t odrfs_early_fork_daemon_pid(void);
/// In the daemon: the pipe's write end for "ready" / "error: …", else -1.
int odrfs_early_fork_ready_descriptor(void);

#endif
