/*
 * xtask-branch.h: the branch half of the lab's core model (included by
 * xtask-cache.c, whose header comment describes the plugin).
 *
 * Decoding. At translation, the instruction that ends a translation block
 * is decoded, if it is a control transfer:
 *   - MIPS32 (classic encodings, either endianness): the branch or jump is
 *     the block's second-to-last instruction, its delay slot the last
 *     (QEMU translates a branch and its delay slot into one block); a
 *     branch that is the very last instruction has its delay slot in the
 *     next block, which is skipped when resolving. Conditional branches
 *     (beq/bne/blez/bgtz/bltz/bgez, the -likely and -and-link forms, bc1f/
 *     bc1t), direct jumps and calls (j, jal, b = beq $x,$x or bgez $0,
 *     bal = bgezal $0), returns (jr $31) and indirect jumps and calls (jr,
 *     jalr). Fall-through and link address: the branch + 8.
 *   - ARM (A32): b/bl/blx(imm), bx/blx(reg), data processing and ldr
 *     writing pc, ldm with pc in its list; returns are bx lr, mov pc, lr,
 *     ldr pc, [sp], #4 and ldm sp/fp with pc (pop and frame-pointer
 *     epilogues); exception returns (an S suffix, ldm ^) are not
 *     predicted (DDI 0388, 7.3.2) and not counted. Any condition but AL
 *     makes a transfer conditional. Fall-through and link address: + 4.
 *     Blocks holding a 2-byte instruction (Thumb) are not decoded.
 *
 * Resolution. The branch's own instruction callback (it runs when the
 * branch executes, not when its block starts, so a block left early by an
 * exception records nothing) leaves it pending; the start of the next
 * executed block resolves it: that block's first address against the
 * fall-through and the target. A conditional branch is taken when the
 * next address is its target (or anything but its fall-through, for an
 * indirect one), not taken at its fall-through; a direct branch whose next
 * address is neither (an interrupt or exception came in between) is
 * counted as unresolved and trains nothing.
 *
 * Prediction, per core, as the target's [lab.timing.predictor] says:
 *   - bimodal: a table of 2-bit saturating counters indexed by the
 *     branch's address (bits 2 and up); 24K, 34K/1004K;
 *   - gshare: the same table indexed by the address XOR a global history
 *     of the last `hist` conditional outcomes; Cortex-A9's GHB;
 *   - majority: three such tables (bimodal, gshare and a table indexed by
 *     the global history alone) voting; the 74K's "majority voting between
 *     three different algorithms, one of which is gshare" (MD00541);
 *   - a return stack of `ras` entries: calls push their link address,
 *     returns pop their prediction (an empty stack predicts nothing);
 *   - with `btac` entries (Cortex-A9's BTAC, 2-way): taken branches need
 *     an entry holding their target, or fetch goes on sequentially (a
 *     misprediction), and indirect jumps are predicted to go where they
 *     went last; without one (the MIPS cores compute direct targets in the
 *     fetch unit), indirect jumps other than returns are not predicted and
 *     always count as mispredicted.
 * Counters start weakly not taken (1 of 0..3).
 */
#ifndef XTASK_BRANCH_H
#define XTASK_BRANCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum branch_kind {
    BR_NONE = 0,
    BR_DIRECT, /* conditional or not, target known */
    BR_CALL,   /* direct call: jal, bal, bgezal, bl, blx(imm) */
    BR_RETURN,
    BR_INDIRECT,
    BR_INDIRECT_CALL,
};

enum isa { ISA_NONE = 0, ISA_MIPS, ISA_ARM };

typedef struct {
    uint64_t pc;
    uint64_t target;      /* 0: indirect */
    uint64_t fallthrough; /* next address when not taken */
    uint64_t link;        /* pushed by calls */
    uint8_t kind;
    bool conditional;
    bool slot_in_next_block; /* MIPS: delay slot starts the next block */
} Branch;

/* What a block's last instructions decode to; kind BR_NONE if nothing. */
static uint32_t word_of(const uint8_t *p, bool big_endian)
{
    if (big_endian) {
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
               (uint32_t)p[2] << 8 | p[3];
    }
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 |
           p[0];
}

static int64_t sext(uint32_t v, unsigned bits)
{
    uint64_t m = 1ULL << (bits - 1);
    uint64_t x = v & ((1ULL << bits) - 1);
    return (int64_t)((x ^ m) - m);
}

/* MIPS32: decodes `w` at `pc` into `b`; false if it is no control transfer. */
static bool decode_mips(uint32_t w, uint64_t pc, Branch *b)
{
    unsigned op = w >> 26, rs = (w >> 21) & 31, rt = (w >> 16) & 31;
    uint64_t branch_target = pc + 4 + (uint64_t)(sext(w & 0xffff, 16) * 4);

    memset(b, 0, sizeof(*b));
    b->pc = pc;
    b->fallthrough = pc + 8;
    b->link = pc + 8;
    switch (op) {
    case 0: /* SPECIAL */
        switch (w & 0x3f) {
        case 0x08: /* jr */
            b->kind = rs == 31 ? BR_RETURN : BR_INDIRECT;
            return true;
        case 0x09: /* jalr */
            b->kind = ((w >> 11) & 31) == 0 ? BR_INDIRECT : BR_INDIRECT_CALL;
            return true;
        default:
            return false;
        }
    case 1: /* REGIMM */
        switch (rt) {
        case 0x00: case 0x01: case 0x02: case 0x03: /* bltz bgez (likely) */
            b->kind = BR_DIRECT;
            b->target = branch_target;
            /* bgez $0 is "b": always taken. */
            b->conditional = !(rs == 0 && (rt & 1));
            return true;
        case 0x10: case 0x11: case 0x12: case 0x13: /* bltzal bgezal (likely) */
            b->kind = BR_CALL;
            b->target = branch_target;
            b->conditional = !(rs == 0 && (rt & 1)); /* bal */
            return true;
        default:
            return false;
        }
    case 2: case 3: /* j, jal */
        b->kind = op == 3 ? BR_CALL : BR_DIRECT;
        b->target = ((pc + 4) & ~0x0fffffffULL) | ((uint64_t)(w & 0x03ffffff) << 2);
        return true;
    case 4: case 5: case 6: case 7:         /* beq bne blez bgtz */
    case 0x14: case 0x15: case 0x16: case 0x17: /* the -likely forms */
        b->kind = BR_DIRECT;
        b->target = branch_target;
        /* beq $x, $x is "b". */
        b->conditional = !((op & 0xf) == 4 && rs == rt);
        return true;
    case 0x11: /* COP1: bc1f/bc1t (and -likely) */
        if (rs == 0x08) {
            b->kind = BR_DIRECT;
            b->target = branch_target;
            b->conditional = true;
            return true;
        }
        return false;
    default:
        return false;
    }
}

/* ARM A32: decodes `w` at `pc` into `b`; false if it is no (predicted)
 * control transfer. */
static bool decode_arm(uint32_t w, uint64_t pc, Branch *b)
{
    unsigned cond = w >> 28, rd = (w >> 12) & 15, rn = (w >> 16) & 15;

    memset(b, 0, sizeof(*b));
    b->pc = pc;
    b->fallthrough = pc + 4;
    b->link = pc + 4;
    if (cond == 0xf) {
        if (((w >> 25) & 7) == 5) { /* blx(imm) */
            b->kind = BR_CALL;
            b->target = pc + 8 + (uint64_t)(sext(w & 0xffffff, 24) * 4) +
                        ((w >> 24) & 1) * 2;
            return true;
        }
        return false;
    }
    b->conditional = cond != 0xe;
    if (((w >> 25) & 7) == 5) { /* b, bl */
        b->kind = (w >> 24) & 1 ? BR_CALL : BR_DIRECT;
        b->target = pc + 8 + (uint64_t)(sext(w & 0xffffff, 24) * 4);
        return true;
    }
    if ((w & 0x0ffffff0) == 0x012fff10) { /* bx */
        b->kind = (w & 15) == 14 ? BR_RETURN : BR_INDIRECT;
        return true;
    }
    if ((w & 0x0ffffff0) == 0x012fff30) { /* blx(reg) */
        b->kind = BR_INDIRECT_CALL;
        return true;
    }
    if (((w >> 26) & 3) == 0 && rd == 15) { /* data processing writing pc */
        unsigned opcode = (w >> 21) & 15;
        bool s = (w >> 20) & 1, immediate = (w >> 25) & 1;
        if (!immediate && (w & 0x90) == 0x90) {
            return false; /* multiplies, extra loads and stores */
        }
        if (opcode >= 8 && opcode <= 11) {
            return false; /* tst teq cmp cmn (and msr/mrs): no pc write */
        }
        if (s) {
            return false; /* movs pc, lr ...: exception return, unpredicted */
        }
        b->kind = opcode == 13 && !immediate && (w & 0xfff) == 14 ? BR_RETURN
                                                                   : BR_INDIRECT;
        return true;
    }
    if (((w >> 26) & 3) == 1 && ((w >> 20) & 1) && rd == 15) { /* ldr pc */
        if (((w >> 25) & 1) && ((w >> 4) & 1)) {
            return false; /* media instructions */
        }
        b->kind = rn == 13 ? BR_RETURN : BR_INDIRECT;
        return true;
    }
    if (((w >> 25) & 7) == 4 && ((w >> 20) & 1) && (w & 0x8000)) { /* ldm pc */
        if ((w >> 22) & 1) {
            return false; /* ldm ^: exception return */
        }
        b->kind = rn == 13 || rn == 11 ? BR_RETURN : BR_INDIRECT;
        return true;
    }
    return false;
}

enum predictor_kind { BP_BIMODAL = 1, BP_GSHARE, BP_MAJORITY };

typedef struct {
    int kind;
    uint64_t entries; /* per table, a power of two */
    unsigned hist;    /* global history bits */
    uint64_t ras;     /* return stack entries (0: none) */
    uint64_t btac;    /* BTAC entries, 2-way (0: none) */
} PredictorConfig;

typedef struct {
    uint8_t *tables[3];
    uint64_t history;
    uint64_t *stack;
    uint64_t depth, top; /* entries held, next push slot */
    uint64_t *btac_pc, *btac_target; /* [sets][2], MRU first */
} Predictor;

static uint64_t mix(uint64_t pc)
{
    return pc >> 2;
}

static bool predictor_init(Predictor *p, const PredictorConfig *c)
{
    int n = c->kind == BP_MAJORITY ? 3 : 1;

    memset(p, 0, sizeof(*p));
    for (int i = 0; i < n; i++) {
        p->tables[i] = malloc(c->entries);
        if (!p->tables[i]) {
            return false;
        }
        memset(p->tables[i], 1, c->entries);
    }
    if (c->ras) {
        p->stack = calloc(c->ras, sizeof(uint64_t));
        if (!p->stack) {
            return false;
        }
    }
    if (c->btac) {
        p->btac_pc = calloc(c->btac, sizeof(uint64_t));
        p->btac_target = calloc(c->btac, sizeof(uint64_t));
        if (!p->btac_pc || !p->btac_target) {
            return false;
        }
    }
    return true;
}

/* The counter indices of each table for `pc`. */
static void predictor_slots(const Predictor *p, const PredictorConfig *c,
                            uint64_t pc, uint64_t slots[3])
{
    uint64_t mask = c->entries - 1;
    uint64_t h = p->history & ((1ULL << c->hist) - 1);

    switch (c->kind) {
    case BP_BIMODAL:
        slots[0] = mix(pc) & mask;
        break;
    case BP_GSHARE:
        slots[0] = (mix(pc) ^ h) & mask;
        break;
    default:
        slots[0] = mix(pc) & mask;
        slots[1] = (mix(pc) ^ h) & mask;
        slots[2] = h & mask;
        break;
    }
}

/* Predicts the direction of the conditional branch at `pc`, then trains
 * on `taken`; returns the prediction. */
static bool predict_direction(Predictor *p, const PredictorConfig *c,
                              uint64_t pc, bool taken)
{
    uint64_t slots[3];
    int n = c->kind == BP_MAJORITY ? 3 : 1, votes = 0;

    predictor_slots(p, c, pc, slots);
    for (int i = 0; i < n; i++) {
        uint8_t *ctr = &p->tables[i][slots[i]];
        votes += *ctr >= 2;
        if (taken && *ctr < 3) {
            (*ctr)++;
        } else if (!taken && *ctr > 0) {
            (*ctr)--;
        }
    }
    p->history = (p->history << 1) | taken;
    return n == 1 ? votes == 1 : votes >= 2;
}

static void stack_push(Predictor *p, const PredictorConfig *c, uint64_t link)
{
    if (!c->ras) {
        return;
    }
    p->stack[p->top] = link;
    p->top = (p->top + 1) % c->ras;
    if (p->depth < c->ras) {
        p->depth++;
    }
}

/* The predicted return address; 0 when the stack is empty. */
static uint64_t stack_pop(Predictor *p, const PredictorConfig *c)
{
    if (!c->ras || !p->depth) {
        return 0;
    }
    p->top = (p->top + c->ras - 1) % c->ras;
    p->depth--;
    return p->stack[p->top];
}

/* The BTAC's target for `pc` (0: no entry), made most recently used. */
static uint64_t btac_lookup(Predictor *p, const PredictorConfig *c, uint64_t pc)
{
    uint64_t set = mix(pc) & (c->btac / 2 - 1);
    uint64_t *pcs = p->btac_pc + set * 2, *targets = p->btac_target + set * 2;

    if (pcs[0] == pc) {
        return targets[0];
    }
    if (pcs[1] == pc) {
        uint64_t t = targets[1];
        pcs[1] = pcs[0];
        targets[1] = targets[0];
        pcs[0] = pc;
        targets[0] = t;
        return t;
    }
    return 0;
}

/* Records that the branch at `pc` went to `target`, as the MRU entry. */
static void btac_update(Predictor *p, const PredictorConfig *c, uint64_t pc,
                        uint64_t target)
{
    uint64_t set = mix(pc) & (c->btac / 2 - 1);
    uint64_t *pcs = p->btac_pc + set * 2, *targets = p->btac_target + set * 2;

    if (pcs[0] != pc) {
        pcs[1] = pcs[0];
        targets[1] = targets[0];
        pcs[0] = pc;
    }
    targets[0] = target;
}

/* The counts of one core's branches. */
typedef struct {
    uint64_t cond_taken, cond_not_taken, jumps;
    uint64_t cond_mispredicts, return_mispredicts, indirect_mispredicts,
        target_mispredicts, unresolved;
} BranchCounts;

/*
 * Resolves `b` whose next executed address is `next`: counts it and trains
 * the predictor. `bump` publishes a counter (see xtask-cache.c).
 */
static void resolve_branch(Predictor *p, const PredictorConfig *c,
                           BranchCounts *n, const Branch *b, uint64_t next,
                           void (*bump)(uint64_t *))
{
    bool taken;

    if (b->conditional) {
        if (next == b->fallthrough) {
            taken = false;
        } else if (!b->target || next == b->target) {
            taken = true;
        } else {
            bump(&n->unresolved);
            return;
        }
    } else {
        if (b->target && next != b->target) {
            bump(&n->unresolved);
            return;
        }
        taken = true;
    }
    if (b->conditional) {
        bump(taken ? &n->cond_taken : &n->cond_not_taken);
    } else {
        bump(&n->jumps);
    }
    if (b->conditional) {
        bool predicted = predict_direction(p, c, b->pc, taken);
        /* With a BTAC, a branch predicted taken needs its entry to be
         * fetched from its target; without one fetch goes on in sequence. */
        if (predicted && c->btac && b->kind != BR_RETURN &&
            btac_lookup(p, c, b->pc) == 0) {
            predicted = false;
        }
        if (predicted != taken) {
            bump(&n->cond_mispredicts);
            if (taken && c->btac && b->kind != BR_RETURN) {
                btac_update(p, c, b->pc, next);
            }
            if (taken && (b->kind == BR_CALL || b->kind == BR_INDIRECT_CALL)) {
                stack_push(p, c, b->link);
            }
            if (taken && b->kind == BR_RETURN) {
                stack_pop(p, c);
            }
            return;
        }
        if (!taken) {
            return;
        }
    }
    switch (b->kind) {
    case BR_RETURN:
        if (stack_pop(p, c) != next) {
            bump(&n->return_mispredicts);
        }
        break;
    case BR_INDIRECT:
    case BR_INDIRECT_CALL:
        if (!c->btac || btac_lookup(p, c, b->pc) != next) {
            bump(&n->indirect_mispredicts);
        }
        if (c->btac) {
            btac_update(p, c, b->pc, next);
        }
        break;
    default: /* direct */
        if (c->btac) {
            if (btac_lookup(p, c, b->pc) != next) {
                bump(&n->target_mispredicts);
            }
            btac_update(p, c, b->pc, next);
        }
        break;
    }
    if (b->kind == BR_CALL || b->kind == BR_INDIRECT_CALL) {
        stack_push(p, c, b->link);
    }
}

#endif
