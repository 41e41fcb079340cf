/*
 * xtask-cache: the QEMU router lab's L1 cache model (`cargo xtask lab
 * --cache-model`), a TCG plugin built against the qemu-plugin.h of the
 * installed QEMU's Debian source package (xtask/src/lab/cache_model/).
 *
 * It counts every executed guest instruction (an inline add, no call) and
 * feeds TCG's instruction and memory streams to set-associative L1
 * instruction and data caches with LRU replacement, one pair per vCPU (as
 * QEMU's contrib/plugins/cache.c, whose miss counts it reproduces: see
 * xtask/tests/lab_cache_model.rs). Nothing is timed: no prefetch, no TLB,
 * no L2, no write buffer; a miss is a count.
 *
 * Addresses, as cache.c takes them in system emulation:
 *   - instruction: qemu_plugin_insn_haddr(), the host address of the
 *     instruction's bytes in QEMU's guest RAM (RAM blocks are mapped 2 MiB
 *     aligned on x86-64 Linux hosts, so every set-index bit of an L1 is
 *     that of the guest physical address);
 *   - data: the guest physical address (qemu_plugin_hwaddr_phys_addr()),
 *     the virtual address when QEMU has none; accesses to I/O regions are
 *     left out (not cached on a router either).
 *
 * Instruction fetches: cache.c looks the cache up once per instruction. A
 * lookup of the line the previous lookup of the same cache hit or filled
 * changes nothing (a hit on the most recently used line), so this plugin
 * looks up only at the first instruction of each translation block and at
 * each instruction that starts another line than the one before it in the
 * block: the same misses for a fraction of the calls. Instructions are
 * counted by the inline counter, so "accesses" of the I-cache is "insns".
 *
 * Arguments (all required but cores and socket):
 *   icachesize=BYTES,iassoc=WAYS,iblksize=BYTES   the L1 I-cache
 *   dcachesize=BYTES,dassoc=WAYS,dblksize=BYTES   the L1 D-cache
 *   cores=N          caches per vCPU index modulo N (default: vCPUs)
 *   socket=PATH      serve a snapshot of the counters on this unix socket
 * (cache.c's names for the geometry). Line sizes and set counts must be
 * powers of two.
 *
 * Reading the counters: every connection to the socket gets one line and
 * is closed:
 *   xtask-cache 1 insns=N l1i_misses=N l1d_accesses=N l1d_misses=N
 *       icache=SIZE/WAYS/LINE dcache=SIZE/WAYS/LINE cores=N
 * (one line, fields separated by one space). A thread of the plugin serves
 * it with every signal blocked (QEMU uses SIGUSR1 and others itself), so a
 * reader stops nothing. At exit the same fields go to QEMU's log
 * (`-d plugin`) as "xtask-cache exit insns=N ...".
 *
 * The counters are written by the one TCG thread of a run under -icount
 * (which forbids multi-threaded TCG) and read with relaxed atomic loads:
 * each value is exact, the four are read a few instructions apart.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* The snapshot line's format, second word of the line. */
#define FORMAT_VERSION 1

/* An invalid way: no line address is all ones (lines are >= 4 bytes). */
#define INVALID UINT64_MAX

typedef struct {
    uint64_t size, ways, line;
} Geometry;

/*
 * One cache. Each set's ways hold line addresses (address >> line_shift)
 * from most to least recently used; a hit moves its way to the front, a
 * miss shifts every way back (dropping the last, the LRU line or an
 * invalid one) and puts the new line in front. That is exact LRU, hence
 * the same hits and misses as cache.c's generation counters.
 */
typedef struct {
    uint64_t *lines;
    uint64_t sets;
    uint64_t ways;
    unsigned line_shift;
    uint64_t accesses;
    uint64_t misses;
} Cache;

static Geometry igeom, dgeom;
static int cores;
static Cache *icaches, *dcaches;
static uint64_t insns;
static char *socket_path;
static int listen_fd = -1;

static uint64_t load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* One writer (the TCG thread): a plain add, published atomically. */
static void bump(uint64_t *p)
{
    __atomic_store_n(p, *p + 1, __ATOMIC_RELAXED);
}

static bool power_of_two(uint64_t x)
{
    return x && !(x & (x - 1));
}

static const char *geometry_error(const Geometry *g)
{
    if (!g->size || !g->ways || !g->line) {
        return "size, ways and line size must all be given and above 0";
    }
    if (!power_of_two(g->line) || g->line < 4) {
        return "the line size must be a power of two, at least 4";
    }
    if (g->size % (g->ways * g->line)) {
        return "the size must be a multiple of ways * line size";
    }
    if (!power_of_two(g->size / (g->ways * g->line))) {
        return "the number of sets (size / (ways * line size)) must be a power of two";
    }
    return NULL;
}

static void cache_init(Cache *c, const Geometry *g)
{
    c->sets = g->size / (g->ways * g->line);
    c->ways = g->ways;
    c->line_shift = (unsigned)__builtin_ctzll(g->line);
    c->lines = malloc(sizeof(uint64_t) * c->sets * c->ways);
    if (!c->lines) {
        fprintf(stderr, "xtask-cache: out of memory\n");
        abort();
    }
    for (uint64_t i = 0; i < c->sets * c->ways; i++) {
        c->lines[i] = INVALID;
    }
    c->accesses = 0;
    c->misses = 0;
}

/* Looks `addr` up in `c`; counts the access, and the miss if it is one. */
static void cache_access(Cache *c, uint64_t addr)
{
    uint64_t line = addr >> c->line_shift;
    uint64_t *set = c->lines + (line & (c->sets - 1)) * c->ways;
    uint64_t i;

    bump(&c->accesses);
    for (i = 0; i < c->ways; i++) {
        if (set[i] == line) {
            break;
        }
    }
    if (i == c->ways) {
        bump(&c->misses);
        i = c->ways - 1;
    }
    memmove(set + 1, set, sizeof(uint64_t) * i);
    set[0] = line;
}

static void icache_access(unsigned int vcpu_index, void *udata)
{
    cache_access(&icaches[vcpu_index % cores], (uint64_t)(uintptr_t)udata);
}

static void dcache_access(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                          uint64_t vaddr, void *udata)
{
    struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
    uint64_t addr;

    (void)udata;
    if (hw && qemu_plugin_hwaddr_is_io(hw)) {
        return;
    }
    addr = hw ? qemu_plugin_hwaddr_phys_addr(hw) : vaddr;
    cache_access(&dcaches[vcpu_index % cores], addr);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    unsigned shift = icaches[0].line_shift;
    uint64_t previous_line = 0;

    (void)id;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t addr = (uint64_t)(uintptr_t)qemu_plugin_insn_haddr(insn);

        qemu_plugin_register_vcpu_insn_exec_inline(
            insn, QEMU_PLUGIN_INLINE_ADD_U64, &insns, 1);
        if (i == 0 || addr >> shift != previous_line) {
            qemu_plugin_register_vcpu_insn_exec_cb(
                insn, icache_access, QEMU_PLUGIN_CB_NO_REGS,
                (void *)(uintptr_t)addr);
        }
        previous_line = addr >> shift;
        qemu_plugin_register_vcpu_mem_cb(insn, dcache_access,
                                         QEMU_PLUGIN_CB_NO_REGS,
                                         QEMU_PLUGIN_MEM_RW, NULL);
    }
}

/* The counters' fields of the snapshot line, into `buf`. */
static void format_counters(char *buf, size_t len)
{
    uint64_t imisses = 0, daccesses = 0, dmisses = 0;

    for (int i = 0; i < cores; i++) {
        imisses += load(&icaches[i].misses);
        daccesses += load(&dcaches[i].accesses);
        dmisses += load(&dcaches[i].misses);
    }
    snprintf(buf, len,
             "insns=%" PRIu64 " l1i_misses=%" PRIu64 " l1d_accesses=%" PRIu64
             " l1d_misses=%" PRIu64 " icache=%" PRIu64 "/%" PRIu64 "/%" PRIu64
             " dcache=%" PRIu64 "/%" PRIu64 "/%" PRIu64 " cores=%d",
             load(&insns), imisses, daccesses, dmisses, igeom.size, igeom.ways,
             igeom.line, dgeom.size, dgeom.ways, dgeom.line, cores);
}

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
    char fields[512], line[600];

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

static void at_exit(qemu_plugin_id_t id, void *p)
{
    char fields[512], line[600];

    (void)id;
    (void)p;
    format_counters(fields, sizeof(fields));
    snprintf(line, sizeof(line), "xtask-cache exit %s\n", fields);
    qemu_plugin_outs(line);
}

/* `value` of "key=value" as a number; false if it is not one. */
static bool parse_u64(const char *value, uint64_t *out)
{
    char *end;

    if (!*value || *value == '-') {
        return false;
    }
    errno = 0;
    *out = strtoull(value, &end, 10);
    return !errno && !*end;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
                                           const qemu_info_t *info, int argc,
                                           char **argv)
{
    struct {
        const char *key;
        uint64_t *value;
    } numbers[] = {
        { "icachesize", &igeom.size }, { "iassoc", &igeom.ways },
        { "iblksize", &igeom.line },   { "dcachesize", &dgeom.size },
        { "dassoc", &dgeom.ways },     { "dblksize", &dgeom.line },
    };
    uint64_t n_cores = 0;
    const char *err;

    if (!info->system_emulation) {
        fprintf(stderr, "xtask-cache: models a system's caches; "
                        "use it with qemu-system-*\n");
        return -1;
    }
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        bool known = false;

        if (!eq) {
            fprintf(stderr, "xtask-cache: argument without '=': %s\n", argv[i]);
            return -1;
        }
        *eq = '\0';
        for (size_t k = 0; k < sizeof(numbers) / sizeof(numbers[0]); k++) {
            if (!strcmp(argv[i], numbers[k].key)) {
                known = parse_u64(eq + 1, numbers[k].value);
                if (!known) {
                    fprintf(stderr, "xtask-cache: %s=%s is not a number\n",
                            argv[i], eq + 1);
                    return -1;
                }
            }
        }
        if (!strcmp(argv[i], "cores")) {
            if (!parse_u64(eq + 1, &n_cores) || !n_cores || n_cores > 1024) {
                fprintf(stderr, "xtask-cache: cores=%s: 1 to 1024\n", eq + 1);
                return -1;
            }
            known = true;
        } else if (!strcmp(argv[i], "socket")) {
            socket_path = strdup(eq + 1);
            known = true;
        }
        if (!known) {
            fprintf(stderr, "xtask-cache: unknown argument %s\n", argv[i]);
            return -1;
        }
    }
    if ((err = geometry_error(&igeom))) {
        fprintf(stderr, "xtask-cache: I-cache: %s\n", err);
        return -1;
    }
    if ((err = geometry_error(&dgeom))) {
        fprintf(stderr, "xtask-cache: D-cache: %s\n", err);
        return -1;
    }
    cores = n_cores ? (int)n_cores : qemu_plugin_n_vcpus();
    if (cores < 1) {
        cores = 1;
    }
    icaches = calloc((size_t)cores, sizeof(Cache));
    dcaches = calloc((size_t)cores, sizeof(Cache));
    if (!icaches || !dcaches) {
        fprintf(stderr, "xtask-cache: out of memory\n");
        return -1;
    }
    for (int i = 0; i < cores; i++) {
        cache_init(&icaches[i], &igeom);
        cache_init(&dcaches[i], &dgeom);
    }
    if (socket_path && start_server(socket_path) < 0) {
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
