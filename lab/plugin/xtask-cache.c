/*
 * xtask-cache: the QEMU router lab's cache and core model (`cargo xtask
 * lab --cache-model`), a TCG plugin built against the qemu-plugin.h of the
 * installed QEMU's Debian source package (xtask/src/lab/cache_model/).
 *
 * It counts every executed guest instruction (an inline add, no call) and
 * feeds TCG's instruction and memory streams to set-associative L1
 * instruction and data caches with LRU replacement, one pair per vCPU (as
 * QEMU's contrib/plugins/cache.c, whose miss counts it reproduces with one
 * vCPU: see xtask/tests/lab_cache_model.rs). Nothing is timed here: a miss
 * is a count; xtask/src/results/lab/core_model.rs turns counts into cycles.
 *
 * Several vCPUs (a two-core lab, `-smp 2`): every count is kept per vCPU
 * and the snapshot gives each one's beside the sums. QEMU then runs each
 * vCPU on a host thread of its own (multi-threaded TCG, the lab's choice
 * for more than one vCPU: xtask/src/lab/qemu.rs says why), so:
 *   - instructions are counted per vCPU by a callback at each translation
 *     block's start that adds the block's length (an exception inside a
 *     block counts the instructions after it too), not by the inline add,
 *     which all threads would share;
 *   - each vCPU's L1s, predictor and counters are written by its own
 *     thread only; a store first takes its line out of the other vCPUs'
 *     L1 D-caches (write-invalidate, as the cores' coherence protocols do:
 *     MESI on the Cortex-A9's SCU, the 1004K's coherence manager), under
 *     each one's lock, a dirty copy going to the L2; the storing vCPU
 *     counts the lines it took (`invalidations`) and those write-backs;
 *   - the L2 is one, shared by the vCPUs as the MT7621's and the
 *     BCM47094's are, under a lock of its own (taken inside an L1's, never
 *     the other way, so no two threads wait on each other).
 * A load that finds the line dirty in another L1 is not modelled apart: it
 * misses its own L1 and is served by the L2.
 *
 * With `isa=` (the core model, from the target's [lab.timing]) it also
 * counts, per vCPU:
 *   - branches taken and not taken, jumps, and the mispredictions of a
 *     predictor of the core's kind and size (xtask-branch.h);
 *   - an L2 fed by the L1 misses: instruction fetches, data line fills
 *     (loads and stores: the L1 D-cache allocates on a write miss) and the
 *     write-backs of dirty L1 D-cache lines (the L1 D-cache is write-back);
 *     without `l2size` there is no L2 and every fill goes to memory;
 *   - L1 D-cache misses of stores apart from those of loads;
 *   - uncached accesses (to I/O regions, left out of the caches) and
 *     unaligned ones (address not a multiple of the access size).
 * The L1 counts are the same with or without it.
 *
 * Addresses, as cache.c takes them in system emulation:
 *   - instruction: qemu_plugin_insn_haddr(), the host address of the
 *     instruction's bytes in QEMU's guest RAM (RAM blocks are mapped 2 MiB
 *     aligned on x86-64 Linux hosts, so every set-index bit of an L1 is
 *     that of the guest physical address; the same holds for an L2 of up
 *     to 2 MiB per way);
 *   - data: the guest physical address (qemu_plugin_hwaddr_phys_addr()),
 *     the virtual address when QEMU has none; accesses to I/O regions are
 *     left out (not cached on a router either).
 * Instruction and data lines therefore never share an L2 line: code read
 * as data (rare on the forwarding path) is cached twice.
 *
 * Instruction fetches: cache.c looks the cache up once per instruction. A
 * lookup of the line the previous lookup of the same cache hit or filled
 * changes nothing (a hit on the most recently used line), so this plugin
 * looks up only at the first instruction of each translation block and at
 * each instruction that starts another line than the one before it in the
 * block: the same misses for a fraction of the calls. Instructions are
 * counted by the inline counter, so "accesses" of the I-cache is "insns".
 *
 * Arguments (the six geometry ones required):
 *   icachesize=BYTES,iassoc=WAYS,iblksize=BYTES   the L1 I-cache
 *   dcachesize=BYTES,dassoc=WAYS,dblksize=BYTES   the L1 D-cache
 *   cores=N          caches per vCPU index modulo N (default: vCPUs; at
 *                    least the vCPUs, which run on threads of their own)
 *   socket=PATH      serve a snapshot of the counters on this unix socket
 *   isa=mips|arm     the core model, decoding this instruction set
 *   endian=big|little  byte order of the guest's instructions (default little)
 *   bp=bimodal|gshare|majority,bpentries=N,bphist=BITS,ras=N,btac=N
 *                    the branch predictor (with isa; see xtask-branch.h)
 *   l2size=BYTES,l2assoc=WAYS,l2blksize=BYTES     the L2 (with isa)
 *   l2writeback=0    the L2 takes no write-backs (as cache.c's L2; the
 *                    tests compare the two)
 * (cache.c's names for the L1 geometry). Line sizes, set counts and
 * predictor table sizes must be powers of two.
 *
 * Reading the counters: every connection to the socket gets one line and
 * is closed:
 *   xtask-cache 2 insns=N l1i_misses=N l1d_accesses=N l1d_misses=N
 *       [CORE] icache=SIZE/WAYS/LINE dcache=SIZE/WAYS/LINE cores=N
 * where CORE, with the core model only, is
 *   l1d_store_misses=N l1d_writebacks=N l2_accesses=N l2_misses=N
 *   l2_store_misses=N l2_writebacks=N cond_taken=N cond_not_taken=N
 *   jumps=N cond_mispredicts=N return_mispredicts=N indirect_mispredicts=N
 *   target_mispredicts=N unresolved=N uncached=N unaligned=N
 *   l2=SIZE/WAYS/LINE bp=KIND/ENTRIES/HIST/RAS/BTAC
 * (one line, fields separated by one space; l2=0/0/0 without an L2). A
 * thread of the plugin serves it with every signal blocked (QEMU uses
 * SIGUSR1 and others itself), so a reader stops nothing. At exit the same
 * fields go to QEMU's log (`-d plugin`) as "xtask-cache exit insns=N ...".
 *
 * Several vCPUs: after those fields, one per vCPU,
 *   cpuN=INSNS,L1I_MISSES,L1D_ACCESSES,L1D_MISSES,INVALIDATIONS[,CORE]
 * with CORE the sixteen core-model counters in the order above
 * (l1d_store_misses … unaligned), and l1d_invalidations=N, their sum, in
 * the sums. With one vCPU the line has a cpu0 field too.
 *
 * Every counter has one writer (a vCPU's thread; under -icount, which
 * forbids multi-threaded TCG, the one TCG thread) and is read with relaxed
 * atomic loads: each value is exact, the others are read a few
 * instructions apart.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
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
#define FORMAT_VERSION 3
/* Room for a snapshot line's fields: the sums, then per vCPU 21 numbers
 * of up to 20 digits. */
#define SNAPSHOT_CORES 64
#define SNAPSHOT_BYTES (1024 + 512 * SNAPSHOT_CORES)

static uint64_t load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* One writer (the TCG thread): a plain add, published atomically. */
static void bump(uint64_t *p)
{
    __atomic_store_n(p, *p + 1, __ATOMIC_RELAXED);
}

#include "xtask-branch.h"
#include "xtask-lru.h"
#include "xtask-server.h"

/* One vCPU's core model: what the L1 misses and branches did. */
typedef struct {
    Predictor predictor;
    BranchCounts branches;
    const Branch *pending;
    uint64_t l1d_store_misses, l1d_writebacks;
    uint64_t l2_accesses, l2_misses, l2_store_misses, l2_writebacks;
    uint64_t uncached, unaligned;
} Core;

static Geometry igeom, dgeom, l2geom;
static int cores;
static Cache *icaches, *dcaches, *l2cache;
static Core *core_state;
static uint64_t insns;
/* Per vCPU (several vCPUs only): its instructions; the lines its stores
 * took from the other vCPUs' L1 D-caches; the lock of its L1 D-cache. */
static uint64_t *core_insns, *invalidations;
/* Per vCPU (several vCPUs with the core model): the instructions of blocks
 * below `user_end`, the user-mode part of its address space: MIPS32's
 * kuseg ends at 0x80000000 (the architecture's), ARM Linux's user space
 * at PAGE_OFFSET, 0xc0000000 with the default VMSPLIT_3G
 * (arch/arm/Kconfig). Known answers compare a user-mode loop's
 * instructions without the CPU's timer ticks, which run in the kernel. */
static uint64_t *user_insns;
static uint64_t user_end;
static pthread_mutex_t *dlocks;
/* The shared L2's lock, and the decoded branches' (several vCPUs). */
static pthread_mutex_t l2lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t branch_lock = PTHREAD_MUTEX_INITIALIZER;

/* One access of the shared L2, under its lock with several vCPUs. */
static Outcome l2_access(uint64_t addr, bool store)
{
    Outcome out;

    if (cores > 1) {
        pthread_mutex_lock(&l2lock);
    }
    out = cache_access(l2cache, addr, store);
    if (cores > 1) {
        pthread_mutex_unlock(&l2lock);
    }
    return out;
}
static char *socket_path;
static int isa = ISA_NONE;
static bool big_endian;
static PredictorConfig bp;
/* l2writeback=0 leaves write-backs out: QEMU's cache.c has none, and the
 * tests compare the L2 with its. */
static uint64_t l2_takes_write_backs = 1;

/* An L1 line fill of the core model: from the L2, or from memory. */
static void l2_fill(Core *k, uint64_t addr, bool store)
{
    bump(&k->l2_accesses);
    if (!l2cache || l2_access(addr, false).miss) {
        bump(&k->l2_misses);
        if (store) {
            bump(&k->l2_store_misses);
        }
    }
}

/* A dirty L1 D-cache line written back: into the L2 (write-allocate). */
static void l2_write_back(Core *k, uint64_t addr)
{
    bump(&k->l1d_writebacks);
    if (l2cache && l2_takes_write_backs) {
        bump(&k->l2_writebacks);
        l2_access(addr, true);
    }
}

/* A block starts (several vCPUs): its length in instructions (udata's
 * upper 32 bits; its address the lower) is the vCPU's, and its user-mode
 * instructions' when it lies below `user_end`. Only the vCPU's own thread
 * writes its counters. */
static void count_block(unsigned int vcpu_index, void *udata)
{
    unsigned core = vcpu_index % (unsigned)cores;
    uint64_t packed = (uint64_t)(uintptr_t)udata;
    uint64_t length = packed >> 32;
    uint64_t *n = &core_insns[core];

    __atomic_store_n(n, *n + length, __ATOMIC_RELAXED);
    if ((packed & 0xffffffffu) < user_end) {
        uint64_t *u = &user_insns[core];

        __atomic_store_n(u, *u + length, __ATOMIC_RELAXED);
    }
}

/* vCPU `core` stores to `addr`: the other L1 D-caches lose the line, a
 * dirty copy written back to the L2 (counted as `core`'s: its store made
 * the coherence traffic). */
static void invalidate_others(int core, uint64_t addr)
{
    for (int o = 0; o < cores; o++) {
        int held;

        if (o == core) {
            continue;
        }
        pthread_mutex_lock(&dlocks[o]);
        held = cache_invalidate(&dcaches[o], addr);
        if (held) {
            bump(&invalidations[core]);
        }
        if (held == 2 && core_state) {
            l2_write_back(&core_state[core], addr);
        }
        pthread_mutex_unlock(&dlocks[o]);
    }
}

static void icache_access(unsigned int vcpu_index, void *udata)
{
    int core = (int)(vcpu_index % (unsigned)cores);
    uint64_t addr = (uint64_t)(uintptr_t)udata;

    if (cache_access(&icaches[core], addr, false).miss && core_state) {
        l2_fill(&core_state[core], addr, false);
    }
}

static void dcache_access(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                          uint64_t vaddr, void *udata)
{
    struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
    int core = (int)(vcpu_index % (unsigned)cores);
    Core *k = core_state ? &core_state[core] : NULL;
    bool store = qemu_plugin_mem_is_store(info);
    uint64_t addr;
    Outcome out;

    (void)udata;
    if (hw && qemu_plugin_hwaddr_is_io(hw)) {
        if (k) {
            bump(&k->uncached);
        }
        return;
    }
    addr = hw ? qemu_plugin_hwaddr_phys_addr(hw) : vaddr;
    if (cores > 1) {
        if (store) {
            invalidate_others(core, addr);
        }
        pthread_mutex_lock(&dlocks[core]);
    }
    out = cache_access(&dcaches[core], addr, store);
    if (!k) {
        if (cores > 1) {
            pthread_mutex_unlock(&dlocks[core]);
        }
        return;
    }
    if (vaddr & ((1ULL << qemu_plugin_mem_size_shift(info)) - 1)) {
        bump(&k->unaligned);
    }
    if (out.miss) {
        if (store) {
            bump(&k->l1d_store_misses);
        }
        if (out.written_back != INVALID) {
            l2_write_back(k, out.written_back);
        }
        l2_fill(k, addr, store);
    }
    if (cores > 1) {
        pthread_mutex_unlock(&dlocks[core]);
    }
}

/* A block starts: it resolves the branch that left the one before. */
static void block_start(unsigned int vcpu_index, void *udata)
{
    int core = (int)(vcpu_index % (unsigned)cores);
    Core *k = &core_state[core];
    uint64_t packed = (uint64_t)(uintptr_t)udata;
    uint64_t vaddr = packed & 0xffffffffu;
    const Branch *b = k->pending;

    if (cores > 1) {
        count_block(vcpu_index, udata);
    }
    if (!b) {
        return;
    }
    if (b->slot_in_next_block && vaddr == b->pc + 4) {
        return; /* the delay slot, alone in its block */
    }
    k->pending = NULL;
    resolve_branch(&k->predictor, &bp, &k->branches, b, vaddr, bump);
}

/* A branch executes: the next block's start resolves it. */
static void branch_exec(unsigned int vcpu_index, void *udata)
{
    Core *k = &core_state[vcpu_index % (unsigned)cores];

    if (k->pending) {
        bump(&k->branches.unresolved); /* never resolved: an exception */
    }
    k->pending = udata;
}

/*
 * The decoded branches, one per (address, host address, word): blocks are
 * translated again and again (after flushes, in other processes), and the
 * callbacks point into this table, which only grows.
 */
typedef struct BranchNode {
    Branch branch;
    uint64_t haddr;
    uint32_t word;
    struct BranchNode *next;
} BranchNode;

#define BRANCH_BUCKETS 65536
static BranchNode *branch_table[BRANCH_BUCKETS];

static const Branch *intern_branch(const Branch *b, uint64_t haddr, uint32_t word)
{
    uint64_t h = (b->pc ^ haddr ^ word) * 0x9e3779b97f4a7c15ULL;
    BranchNode **bucket = &branch_table[h >> 48];

    for (BranchNode *n = *bucket; n; n = n->next) {
        if (n->branch.pc == b->pc && n->haddr == haddr && n->word == word &&
            n->branch.slot_in_next_block == b->slot_in_next_block) {
            return &n->branch;
        }
    }
    BranchNode *n = alloc_or_die(sizeof(*n));
    n->branch = *b;
    n->haddr = haddr;
    n->word = word;
    n->next = *bucket;
    *bucket = n;
    return &n->branch;
}

/* Decodes the control transfer that ends `tb` and hooks its instruction. */
static void instrument_branch(struct qemu_plugin_tb *tb, size_t n)
{
    Branch b;
    size_t at;
    struct qemu_plugin_insn *insn;
    uint32_t word;

    for (size_t i = 0; i < n; i++) {
        if (qemu_plugin_insn_size(qemu_plugin_tb_get_insn(tb, i)) != 4) {
            return; /* Thumb or MIPS16: not decoded */
        }
    }
    for (int back = 1; back <= (isa == ISA_MIPS ? 2 : 1); back++) {
        if ((size_t)back > n) {
            return;
        }
        at = n - (size_t)back;
        insn = qemu_plugin_tb_get_insn(tb, at);
        word = word_of(qemu_plugin_insn_data(insn), big_endian);
        bool found = isa == ISA_MIPS
                         ? decode_mips(word, qemu_plugin_insn_vaddr(insn), &b)
                         : decode_arm(word, qemu_plugin_insn_vaddr(insn), &b);
        if (found) {
            b.slot_in_next_block = isa == ISA_MIPS && back == 1;
            const Branch *interned;

            /* vCPU threads translate at the same time. */
            pthread_mutex_lock(&branch_lock);
            interned = intern_branch(
                &b, (uint64_t)(uintptr_t)qemu_plugin_insn_haddr(insn), word);
            pthread_mutex_unlock(&branch_lock);
            qemu_plugin_register_vcpu_insn_exec_cb(
                insn, branch_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)interned);
            return;
        }
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    unsigned shift = icaches[0].line_shift;
    uint64_t previous_line = 0;

    (void)id;
    if (core_state) {
        /* The guest's 32-bit address, and the block's length above it. */
        qemu_plugin_register_vcpu_tb_exec_cb(
            tb, block_start, QEMU_PLUGIN_CB_NO_REGS,
            (void *)(uintptr_t)((uint64_t)n << 32 |
                                (qemu_plugin_tb_vaddr(tb) & 0xffffffffu)));
    } else if (cores > 1) {
        qemu_plugin_register_vcpu_tb_exec_cb(
            tb, count_block, QEMU_PLUGIN_CB_NO_REGS,
            (void *)(uintptr_t)((uint64_t)n << 32 |
                                (qemu_plugin_tb_vaddr(tb) & 0xffffffffu)));
    }
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t addr = (uint64_t)(uintptr_t)qemu_plugin_insn_haddr(insn);

        if (cores == 1) {
            qemu_plugin_register_vcpu_insn_exec_inline(
                insn, QEMU_PLUGIN_INLINE_ADD_U64, &insns, 1);
        }
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
    if (core_state && n > 0) {
        instrument_branch(tb, n);
    }
}

static const char *bp_name(int kind)
{
    switch (kind) {
    case BP_BIMODAL:
        return "bimodal";
    case BP_GSHARE:
        return "gshare";
    default:
        return "majority";
    }
}

/* The sixteen core-model counters of vCPU `i`, in the snapshot's order. */
static void core_fields(int i, uint64_t out[16])
{
    const Core *k = &core_state[i];
    const BranchCounts *b = &k->branches;
    const uint64_t *fields[16] = {
        &k->l1d_store_misses,   &k->l1d_writebacks,   &k->l2_accesses,
        &k->l2_misses,          &k->l2_store_misses,  &k->l2_writebacks,
        &b->cond_taken,         &b->cond_not_taken,   &b->jumps,
        &b->cond_mispredicts,   &b->return_mispredicts,
        &b->indirect_mispredicts, &b->target_mispredicts, &b->unresolved,
        &k->uncached,           &k->unaligned,
    };
    for (int f = 0; f < 16; f++) {
        out[f] = load(fields[f]);
    }
}

/* The instructions of vCPU `i` so far. */
static uint64_t insns_of(int i)
{
    return cores == 1 ? load(&insns) : load(&core_insns[i]);
}

/* snprintf at `buf + *at`, advancing `*at` (never past `len`). */
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*at >= len) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    *at = n < 0 ? len : *at + (size_t)n;
}

/* The counters' fields of the snapshot line, into `buf`. */
static void format_counters(char *buf, size_t len)
{
    static const char *const core_names[16] = {
        "l1d_store_misses", "l1d_writebacks",    "l2_accesses",
        "l2_misses",        "l2_store_misses",   "l2_writebacks",
        "cond_taken",       "cond_not_taken",    "jumps",
        "cond_mispredicts", "return_mispredicts", "indirect_mispredicts",
        "target_mispredicts", "unresolved",      "uncached",
        "unaligned",
    };
    uint64_t imisses = 0, daccesses = 0, dmisses = 0, inval = 0;
    uint64_t sum[16] = { 0 }, one[16], each[SNAPSHOT_CORES];
    uint64_t total = 0;
    size_t at = 0;

    /* One reading of each vCPU's instructions, so that they add up to the
     * total. */
    for (int i = 0; i < cores; i++) {
        each[i] = insns_of(i);
        total += each[i];
    }
    for (int i = 0; i < cores; i++) {
        imisses += load(&icaches[i].misses);
        daccesses += load(&dcaches[i].accesses);
        dmisses += load(&dcaches[i].misses);
        inval += load(&invalidations[i]);
        if (core_state) {
            core_fields(i, one);
            for (int f = 0; f < 16; f++) {
                sum[f] += one[f];
            }
        }
    }
    put(buf, len, &at,
        "insns=%" PRIu64 " l1i_misses=%" PRIu64 " l1d_accesses=%" PRIu64
        " l1d_misses=%" PRIu64 " l1d_invalidations=%" PRIu64,
        total, imisses, daccesses, dmisses, inval);
    if (core_state) {
        for (int f = 0; f < 16; f++) {
            put(buf, len, &at, " %s=%" PRIu64, core_names[f], sum[f]);
        }
        put(buf, len, &at,
            " l2=%" PRIu64 "/%" PRIu64 "/%" PRIu64 " bp=%s/%" PRIu64
            "/%u/%" PRIu64 "/%" PRIu64,
            l2geom.size, l2geom.ways, l2geom.line, bp_name(bp.kind),
            bp.entries, bp.hist, bp.ras, bp.btac);
    }
    put(buf, len, &at,
        " icache=%" PRIu64 "/%" PRIu64 "/%" PRIu64 " dcache=%" PRIu64
        "/%" PRIu64 "/%" PRIu64 " cores=%d",
        igeom.size, igeom.ways, igeom.line, dgeom.size, dgeom.ways,
        dgeom.line, cores);
    for (int i = 0; i < cores; i++) {
        put(buf, len, &at,
            " cpu%d=%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
            i, each[i], load(&icaches[i].misses),
            load(&dcaches[i].accesses), load(&dcaches[i].misses),
            load(&invalidations[i]));
        if (core_state) {
            core_fields(i, one);
            for (int f = 0; f < 16; f++) {
                put(buf, len, &at, ",%" PRIu64, one[f]);
            }
        }
    }
    if (cores > 1 && user_end) {
        for (int i = 0; i < cores; i++) {
            put(buf, len, &at, "%s%" PRIu64, i ? "," : " user_insns=",
                load(&user_insns[i]));
        }
    }
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    char fields[SNAPSHOT_BYTES], line[SNAPSHOT_BYTES + 64];

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

/* One word argument of `choices` (NULL-terminated); its index + 1, or 0. */
static int parse_choice(const char *value, const char *const *choices)
{
    for (int i = 0; choices[i]; i++) {
        if (!strcmp(value, choices[i])) {
            return i + 1;
        }
    }
    return 0;
}

/* Checks the core model's arguments; an error message or NULL. */
static const char *core_error(uint64_t hist)
{
    if (!isa) {
        if (bp.kind || bp.entries || hist || bp.ras || bp.btac || l2geom.size ||
            l2geom.ways || l2geom.line) {
            return "the branch predictor and the L2 need isa=mips or isa=arm";
        }
        return NULL;
    }
    if (!bp.kind || !power_of_two(bp.entries)) {
        return "bp= and bpentries= (a power of two) are required with isa=";
    }
    if (hist > 30 || (bp.kind != BP_BIMODAL && !hist)) {
        return "bphist= must be 1 to 30 for gshare and majority (0 or absent for bimodal)";
    }
    if (l2_takes_write_backs > 1) {
        return "l2writeback= is 0 or 1";
    }
    if (bp.ras > 64) {
        return "ras= must be at most 64";
    }
    if (bp.btac && (bp.btac < 2 || !power_of_two(bp.btac))) {
        return "btac= must be 0 or a power of two of at least 2 (2-way)";
    }
    if (l2geom.size || l2geom.ways || l2geom.line) {
        return geometry_error(&l2geom);
    }
    return NULL;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
                                           const qemu_info_t *info, int argc,
                                           char **argv)
{
    static const char *const isas[] = { "mips", "arm", NULL };
    static const char *const endians[] = { "little", "big", NULL };
    static const char *const kinds[] = { "bimodal", "gshare", "majority", NULL };
    uint64_t hist = 0;
    struct {
        const char *key;
        uint64_t *value;
    } numbers[] = {
        { "icachesize", &igeom.size }, { "iassoc", &igeom.ways },
        { "iblksize", &igeom.line },   { "dcachesize", &dgeom.size },
        { "dassoc", &dgeom.ways },     { "dblksize", &dgeom.line },
        { "l2size", &l2geom.size },    { "l2assoc", &l2geom.ways },
        { "l2blksize", &l2geom.line }, { "bpentries", &bp.entries },
        { "bphist", &hist },           { "ras", &bp.ras },
        { "btac", &bp.btac },          { "l2writeback", &l2_takes_write_backs },
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
            if (!parse_u64(eq + 1, &n_cores) || !n_cores || n_cores > SNAPSHOT_CORES) {
                fprintf(stderr, "xtask-cache: cores=%s: 1 to 64\n", eq + 1);
                return -1;
            }
            known = true;
        } else if (!strcmp(argv[i], "socket")) {
            socket_path = strdup(eq + 1);
            known = true;
        } else if (!strcmp(argv[i], "isa") || !strcmp(argv[i], "endian") ||
                   !strcmp(argv[i], "bp")) {
            const char *const *choices = !strcmp(argv[i], "isa")      ? isas
                                         : !strcmp(argv[i], "endian") ? endians
                                                                      : kinds;
            int choice = parse_choice(eq + 1, choices);
            if (!choice) {
                fprintf(stderr, "xtask-cache: %s=%s is not one of the choices\n",
                        argv[i], eq + 1);
                return -1;
            }
            if (!strcmp(argv[i], "isa")) {
                isa = choice == 1 ? ISA_MIPS : ISA_ARM;
            } else if (!strcmp(argv[i], "endian")) {
                big_endian = choice == 2;
            } else {
                bp.kind = choice;
            }
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
    if ((err = core_error(hist))) {
        fprintf(stderr, "xtask-cache: core model: %s\n", err);
        return -1;
    }
    bp.hist = (unsigned)hist;
    cores = n_cores ? (int)n_cores : qemu_plugin_n_vcpus();
    if (cores < 1) {
        cores = 1;
    }
    if (cores < qemu_plugin_n_vcpus()) {
        /* vCPUs sharing one core's caches would race on them. */
        fprintf(stderr, "xtask-cache: cores=%d: at least the machine's %d vCPUs\n",
                cores, qemu_plugin_n_vcpus());
        return -1;
    }
    icaches = alloc_or_die((size_t)cores * sizeof(Cache));
    dcaches = alloc_or_die((size_t)cores * sizeof(Cache));
    core_insns = alloc_or_die((size_t)cores * sizeof(uint64_t));
    user_insns = alloc_or_die((size_t)cores * sizeof(uint64_t));
    user_end = isa == ISA_MIPS  ? 0x80000000u
               : isa == ISA_ARM ? 0xc0000000u
                                : 0;
    invalidations = alloc_or_die((size_t)cores * sizeof(uint64_t));
    dlocks = alloc_or_die((size_t)cores * sizeof(pthread_mutex_t));
    for (int i = 0; i < cores; i++) {
        pthread_mutex_init(&dlocks[i], NULL);
    }
    if (isa) {
        core_state = alloc_or_die((size_t)cores * sizeof(Core));
        if (l2geom.size) {
            /* One L2 behind every core. */
            l2cache = alloc_or_die(sizeof(Cache));
            cache_init(l2cache, &l2geom, false);
        }
    }
    for (int i = 0; i < cores; i++) {
        cache_init(&icaches[i], &igeom, false);
        /* The core model writes dirty lines back into its L2. */
        cache_init(&dcaches[i], &dgeom, isa != ISA_NONE);
        if (core_state && !predictor_init(&core_state[i].predictor, &bp)) {
            fprintf(stderr, "xtask-cache: out of memory\n");
            return -1;
        }
    }
    if (socket_path && start_server(socket_path) < 0) {
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
