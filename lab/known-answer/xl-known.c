/*
 * xl-known: the core model's known-answer programs, run in the lab's guest
 * under the model (xtask/src/lab/known_answer/). Freestanding: no C
 * library, its own system calls, built static with the target's cross
 * compiler (MIPS32 o32 either endianness, or ARM EABI in ARM state).
 *
 *   xl-known branch always|alternate|random N
 *       N iterations of a loop whose one conditional branch (in assembly,
 *       so the compiler cannot turn it into a conditional move) is taken
 *       always, every other time, or as bit 31 of a xorshift32 generator
 *       says. Besides it each iteration runs the loop's own back-edge.
 *   xl-known chase N
 *       builds a ring of pointers through a 1 MiB buffer, one per 32-byte
 *       line, in a random order within each 4 KiB page and page after
 *       page (one TLB refill per page), then follows it for N loads.
 *
 * The host runs each twice, with N and 2N, and divides the difference of
 * the model's counters by N: the start-up (exec, page faults, building the
 * ring) cancels. Prints "xl-known done <value>" and exits 0; a usage error
 * exits 2.
 */

typedef unsigned long ulong;
typedef unsigned int u32;

#if defined(__mips__)
static long sys3(long n, long a, long b, long c)
{
    register long v0 __asm__("$2") = n;
    register long a0 __asm__("$4") = a;
    register long a1 __asm__("$5") = b;
    register long a2 __asm__("$6") = c;
    register long a3 __asm__("$7");
    __asm__ volatile("syscall"
                     : "+r"(v0), "=r"(a3)
                     : "r"(a0), "r"(a1), "r"(a2)
                     : "$1", "$3", "$8", "$9", "$10", "$11", "$12", "$13",
                       "$14", "$15", "$24", "$25", "hi", "lo", "memory");
    return a3 ? -v0 : v0;
}
#define SYS_EXIT 4001
#define SYS_WRITE 4004

/* One conditional branch, taken when `bit` is not 0. */
#define PATTERN_BRANCH(count, bit)                                            \
    __asm__ volatile(".set push\n\t.set noreorder\n\t"                       \
                     "bnez %1, 1f\n\t"                                        \
                     "nop\n\t"                                                \
                     "addiu %0, %0, 1\n"                                      \
                     "1:\n\t.set pop"                                         \
                     : "+r"(count)                                            \
                     : "r"(bit))

__asm__(".text\n\t.globl xl_start\n\t.set push\n\t.set noreorder\n"
        "xl_start:\n\t"
        "move $4, $29\n\t"
        "addiu $29, $29, -32\n\t"
        "jal start_c\n\t"
        "nop\n\t"
        ".set pop\n");
#elif defined(__arm__)
static long sys3(long n, long a, long b, long c)
{
    register long r7 __asm__("r7") = n;
    register long r0 __asm__("r0") = a;
    register long r1 __asm__("r1") = b;
    register long r2 __asm__("r2") = c;
    __asm__ volatile("svc 0" : "+r"(r0) : "r"(r7), "r"(r1), "r"(r2) : "memory");
    return r0;
}
#define SYS_EXIT 1
#define SYS_WRITE 4

#define PATTERN_BRANCH(count, bit)                                            \
    __asm__ volatile("cmp %1, #0\n\t"                                        \
                     "bne 1f\n\t"                                             \
                     "add %0, %0, #1\n"                                       \
                     "1:"                                                     \
                     : "+r"(count)                                            \
                     : "r"(bit)                                               \
                     : "cc")

__asm__(".text\n\t.globl xl_start\n\t.arm\n"
        "xl_start:\n\t"
        "mov r0, sp\n\t"
        "bl start_c\n");
#else
#error "xl-known: MIPS or ARM"
#endif

static void out(const char *s)
{
    ulong n = 0;
    while (s[n]) {
        n++;
    }
    sys3(SYS_WRITE, 1, (long)s, (long)n);
}

static void out_number(ulong v)
{
    char buf[24];
    int i = 23;
    buf[i] = 0;
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    out(buf + i);
}

static int equal(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

/* A decimal number; 0 on anything else. */
static ulong number(const char *s)
{
    ulong v = 0;
    if (!*s) {
        return 0;
    }
    for (; *s; s++) {
        if (*s < '0' || *s > '9') {
            return 0;
        }
        v = v * 10 + (ulong)(*s - '0');
    }
    return v;
}

static u32 xorshift(u32 x)
{
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
}

enum { ALWAYS, ALTERNATE, RANDOM };

/* One loop per pattern (not inlined, so the compiler does not test the
 * pattern inside the loop): the pattern's branch and the back-edge. */
__attribute__((noinline)) static ulong always(ulong n)
{
    ulong count = 0, one = 1;
    for (ulong i = 0; i < n; i++) {
        PATTERN_BRANCH(count, one);
    }
    return count;
}

__attribute__((noinline)) static ulong alternate(ulong n)
{
    ulong count = 0;
    for (ulong i = 0; i < n; i++) {
        ulong bit = i & 1;
        PATTERN_BRANCH(count, bit);
    }
    return count;
}

__attribute__((noinline)) static ulong random_pattern(ulong n)
{
    ulong count = 0;
    u32 x = 2463534242u;
    for (ulong i = 0; i < n; i++) {
        x = xorshift(x);
        ulong bit = x >> 31;
        PATTERN_BRANCH(count, bit);
    }
    return count;
}

static ulong branches(int mode, ulong n)
{
    return mode == ALWAYS ? always(n) : mode == ALTERNATE ? alternate(n) : random_pattern(n);
}

#define LINE 32
#define PAGE 4096
#define BUFFER (1 << 20)
static char buffer[BUFFER] __attribute__((aligned(PAGE)));

static ulong chase(ulong n)
{
    enum { LINES = PAGE / LINE };
    u32 order[LINES];
    u32 x = 88675123u;
    void **last = 0, **first = 0;

    for (ulong page = 0; page < BUFFER; page += PAGE) {
        for (u32 i = 0; i < LINES; i++) {
            order[i] = i;
        }
        for (u32 i = LINES - 1; i > 0; i--) { /* Fisher-Yates */
            x = xorshift(x);
            /* j uniform in 0..i without a division (no libgcc here). */
            u32 j = (u32)(((unsigned long long)x * (i + 1)) >> 32), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (u32 i = 0; i < LINES; i++) {
            void **here = (void **)(buffer + page + order[i] * LINE);
            if (last) {
                *last = here;
            } else {
                first = here;
            }
            last = here;
        }
    }
    *last = first;
    void **p = first;
    for (ulong k = 0; k < n; k++) {
        p = (void **)*p;
    }
    return (ulong)((char *)p - buffer);
}

static void usage(void)
{
    out("usage: xl-known branch always|alternate|random N | xl-known chase N\n");
    sys3(SYS_EXIT, 2, 0, 0);
}

void start_c(long *sp) __attribute__((noreturn, used));
void start_c(long *sp)
{
    long argc = sp[0];
    char **argv = (char **)(sp + 1);
    ulong result;

    if (argc == 4 && equal(argv[1], "branch") && number(argv[3])) {
        int mode = equal(argv[2], "always")      ? ALWAYS
                   : equal(argv[2], "alternate") ? ALTERNATE
                   : equal(argv[2], "random")    ? RANDOM
                                                 : -1;
        if (mode < 0) {
            usage();
        }
        result = branches(mode, number(argv[3]));
    } else if (argc == 3 && equal(argv[1], "chase") && number(argv[2])) {
        result = chase(number(argv[2]));
    } else {
        usage();
        result = 0;
    }
    out("xl-known done ");
    out_number(result);
    out("\n");
    sys3(SYS_EXIT, 0, 0, 0);
    for (;;) {
    }
}
