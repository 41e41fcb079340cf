/*
 * xtask-server.h: the unix socket on which the lab's cache model serves
 * snapshots of its counters (included by xtask-cache.c, whose header
 * comment describes the line it writes).
 */
#ifndef XTASK_SERVER_H
#define XTASK_SERVER_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The counters' fields of the snapshot line (xtask-cache.c). */
static void format_counters(char *buf, size_t len);

static int listen_fd = -1;

static void write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

static void *serve(void *arg)
{
    static char fields[SNAPSHOT_BYTES], line[SNAPSHOT_BYTES + 64];

    (void)arg;
    for (;;) {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            return NULL;
        }
        format_counters(fields, sizeof(fields));
        snprintf(line, sizeof(line), "xtask-cache %d %s\n", FORMAT_VERSION,
                 fields);
        write_all(fd, line, strlen(line));
        close(fd);
    }
}

/* Listens on `path` and starts the thread that answers, signals blocked. */
static int start_server(const char *path)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    sigset_t all, old;
    pthread_t thread;
    int err;

    if (strlen(path) >= sizeof(addr.sun_path)) {
        fprintf(stderr, "xtask-cache: socket path too long: %s\n", path);
        return -1;
    }
    strcpy(addr.sun_path, path);
    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd < 0 ||
        bind(listen_fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
        listen(listen_fd, 8) < 0) {
        fprintf(stderr, "xtask-cache: cannot listen on %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&thread, NULL, serve, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        fprintf(stderr, "xtask-cache: cannot start a thread: %s\n",
                strerror(err));
        return -1;
    }
    pthread_detach(thread);
    return 0;
}

#endif
