// Shared by the injection library (inject.cpp) and the device callbacks (patches.cu). The record layouts
// match traces/sanitizer/records.py (version 1): change both together.
#pragma once
#include <stdint.h>

#define F_READ 1u
#define F_WRITE 2u
#define F_ATOMIC 4u
#define SPACE_GLOBAL 0
#define SPACE_LOCAL 1
#define SPACE_SHARED 2
#define MAX_CTA_RANGES 64

struct AccessRecord {  // records.py ACCESS_DTYPE, 280 bytes
    uint32_t cta, warp, pc, flags;
    uint8_t space, width;
    uint16_t pad;
    uint32_t mask;
    uint64_t addr[32];
};
static_assert(sizeof(AccessRecord) == 280, "AccessRecord must match records.py ACCESS_DTYPE");

// Two copies: the host's in pinned host memory (the drain thread's `tail`, and at the launch's end what the device
// counted), and the device's in device memory (inject.cpp copies the host's into it before the launch), which the
// device callbacks read and whose `head` they increment: an atomic on pinned host memory crosses the bus and
// serialized every warp's record (0.37 M records a second on an H100, 26 Nov 2026).
struct TraceState {
    AccessRecord* ring;          // pinned host memory
    unsigned long long* ready;   // pinned host memory: ready[i] == slot + 1 once ring[i] holds that slot
    const unsigned long long* tail;  // the host copy's `drained`, read by the device when the ring may be full
    unsigned long long capacity;
    unsigned long long head;     // slots reserved (device copy; the host's gets it at the launch's end)
    unsigned long long drained;  // slots drained (host copy)
    unsigned long long max_rows;
    unsigned long long function_pc;
    unsigned long long tail_seen;  // device copy: the most `drained` a warp has read (one_poller)
    uint32_t max_rows_reached;
    uint32_t one_poller;  // a full ring's waiting warps read `tail` one at a time (PLACEMENT_TRACE_POLL=each: 0)
    uint32_t polling;     // device copy: 1 while a warp reads `tail` (one_poller)
    uint32_t n_ranges;
    uint32_t range_lo[MAX_CTA_RANGES];
    uint32_t range_hi[MAX_CTA_RANGES];
};
