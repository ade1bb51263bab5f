/* Read loops at C speed, the same for every filesystem compared.
 *   preadbench seq FILE          read the whole file in 1 MiB reads; prints "seconds bytes"
 *   preadbench rand FILE N SEED  N random 4 KiB-aligned preads; prints "seconds N"
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 3) return 64;
    static char buf[1 << 20];
    double start = now();
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) { perror(argv[2]); return 1; }
    if (strcmp(argv[1], "seq") == 0) {
        long long total = 0;
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0) total += n;
        if (n < 0) { perror("read"); return 1; }
        printf("%.6f %lld\n", now() - start, total);
    } else {
        long count = argc > 3 ? atol(argv[3]) : 20000;
        unsigned long long x = argc > 4 ? strtoull(argv[4], 0, 10) : 42;  /* xorshift64, fixed seed */
        struct stat st;
        fstat(fd, &st);
        long long blocks = st.st_size / 4096;
        start = now();
        for (long i = 0; i < count; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            if (pread(fd, buf, 4096, (off_t)(x % blocks) * 4096) != 4096) { perror("pread"); return 1; }
        }
        printf("%.6f %ld\n", now() - start, count);
    }
    close(fd);
    return 0;
}
