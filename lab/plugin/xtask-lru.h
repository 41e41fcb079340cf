/*
 * xtask-lru.h: the set-associative LRU caches of the lab's cache model
 * (included by xtask-cache.c, whose header comment describes the plugin).
 */
#ifndef XTASK_LRU_H
#define XTASK_LRU_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * the same hits and misses as cache.c's generation counters. `dirty`
 * (write-back caches of the core model only) moves with its line.
 */
typedef struct {
    uint64_t *lines;
    uint8_t *dirty;
    uint64_t sets;
    uint64_t ways;
    unsigned line_shift;
    uint64_t accesses;
    uint64_t misses;
} Cache;

/* What an access did: a miss, and the dirty line it evicted (INVALID: none). */
typedef struct {
    bool miss;
    uint64_t written_back;
} Outcome;

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

static void *alloc_or_die(size_t n)
{
    void *p = calloc(1, n);
    if (!p) {
        fprintf(stderr, "xtask-cache: out of memory\n");
        abort();
    }
    return p;
}

static void cache_init(Cache *c, const Geometry *g, bool track_dirty)
{
    c->sets = g->size / (g->ways * g->line);
    c->ways = g->ways;
    c->line_shift = (unsigned)__builtin_ctzll(g->line);
    c->lines = alloc_or_die(sizeof(uint64_t) * c->sets * c->ways);
    c->dirty = track_dirty ? alloc_or_die(c->sets * c->ways) : NULL;
    for (uint64_t i = 0; i < c->sets * c->ways; i++) {
        c->lines[i] = INVALID;
    }
    c->accesses = 0;
    c->misses = 0;
}

/* Looks `addr` up in `c`; counts the access, and the miss if it is one. A
 * store marks the line dirty (in a cache that tracks it). */
static Outcome cache_access(Cache *c, uint64_t addr, bool store)
{
    uint64_t line = addr >> c->line_shift;
    uint64_t first = (line & (c->sets - 1)) * c->ways;
    uint64_t *set = c->lines + first;
    Outcome out = { .miss = false, .written_back = INVALID };
    uint8_t was_dirty = 0;
    uint64_t i;

    bump(&c->accesses);
    for (i = 0; i < c->ways; i++) {
        if (set[i] == line) {
            break;
        }
    }
    if (i == c->ways) {
        bump(&c->misses);
        out.miss = true;
        i = c->ways - 1;
        if (c->dirty && c->dirty[first + i] && set[i] != INVALID) {
            out.written_back = set[i] << c->line_shift;
        }
    } else if (c->dirty) {
        was_dirty = c->dirty[first + i];
    }
    memmove(set + 1, set, sizeof(uint64_t) * i);
    set[0] = line;
    if (c->dirty) {
        memmove(c->dirty + first + 1, c->dirty + first, i);
        c->dirty[first] = store || (!out.miss && was_dirty);
    }
    return out;
}

/*
 * Drops `addr`'s line from `c` (another core's store took it: the
 * coherence protocol's invalidation). Returns 0 when `c` did not hold it,
 * 1 when it held it clean, 2 when dirty (its data then goes to the L2).
 * The freed way becomes the set's least recently used, invalid.
 */
static int cache_invalidate(Cache *c, uint64_t addr)
{
    uint64_t line = addr >> c->line_shift;
    uint64_t first = (line & (c->sets - 1)) * c->ways;
    uint64_t *set = c->lines + first;
    uint64_t i, last = c->ways - 1;
    int held;

    for (i = 0; i < c->ways; i++) {
        if (set[i] == line) {
            break;
        }
    }
    if (i == c->ways) {
        return 0;
    }
    held = c->dirty && c->dirty[first + i] ? 2 : 1;
    memmove(set + i, set + i + 1, sizeof(uint64_t) * (last - i));
    set[last] = INVALID;
    if (c->dirty) {
        memmove(c->dirty + first + i, c->dirty + first + i + 1, last - i);
        c->dirty[first + last] = 0;
    }
    return held;
}

#endif
