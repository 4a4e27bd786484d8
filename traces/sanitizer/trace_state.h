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

struct TraceState {  // in pinned host memory, mapped into the device's address space
    AccessRecord* ring;
    unsigned long long* ready;  // ready[i] == slot + 1 once ring[i] holds that slot
    unsigned long long capacity;
    unsigned long long head;  // slots reserved (device)
    unsigned long long tail;  // slots drained (host)
    unsigned long long max_rows;
    unsigned long long function_pc;
    uint32_t max_rows_reached;
    uint32_t n_ranges;
    uint32_t range_lo[MAX_CTA_RANGES];
    uint32_t range_hi[MAX_CTA_RANGES];
};
