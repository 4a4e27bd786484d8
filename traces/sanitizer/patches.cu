// Device callbacks of `placement trace` (Compute Sanitizer API, sanitizer_patching.h), compiled to a fatbin
// with -Xptxas --compile-as-tools-patch and patched onto every global, shared and local memory instruction.
//
// Per warp: the active lanes of one memory instruction agree on a leader (lowest active lane), which reserves
// one slot (a counter in device memory, trace_state.h) of a ring buffer in pinned host memory that the injection
// library's drain thread empties into the record file as it fills; every active lane writes its own address, the
// leader the rest of the record (traces/sanitizer/records.py, ACCESS_DTYPE) and then the slot's ready word. A full
// ring makes the leader wait for the drain thread, so nothing is lost. Run on an H100 (driver 580.159.04, 26 Nov 2026).
#include <sanitizer_patching.h>
#include <stdint.h>

#include "trace_state.h"

static __device__ __forceinline__ uint32_t lane_id() {
    uint32_t l;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
    return l;
}

// Warp primitives as inline PTX: a tools patch is compiled without libdevice (__activemask and friends
// would be unresolved externs for ptxas --compile-as-tools-patch).
static __device__ __forceinline__ uint32_t active_mask() {
    uint32_t m;
    asm volatile("activemask.b32 %0;" : "=r"(m));
    return m;
}

static __device__ __forceinline__ uint32_t lowest_lane(uint32_t mask) {
    uint32_t r, l;
    asm("brev.b32 %0, %1;" : "=r"(r) : "r"(mask));
    asm("clz.b32 %0, %1;" : "=r"(l) : "r"(r));
    return l;
}

static __device__ __forceinline__ unsigned long long shfl_idx(uint32_t mask, unsigned long long v, uint32_t src) {
    uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
    asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, %2;" : "+r"(lo) : "r"(src), "r"(mask));
    asm volatile("shfl.sync.idx.b32 %0, %0, %1, 0x1f, %2;" : "+r"(hi) : "r"(src), "r"(mask));
    return ((unsigned long long)hi << 32) | lo;
}

static __device__ __forceinline__ void warp_sync(uint32_t mask) { asm volatile("bar.warp.sync %0;" ::"r"(mask)); }

// Orders the record's writes before its ready word's (release), at system scope: the drain thread reads them.
static __device__ __forceinline__ void fence_system() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

static __device__ __forceinline__ void sleep_ns(uint32_t ns) { asm volatile("nanosleep.u32 %0;" ::"r"(ns)); }

static __device__ __forceinline__ bool cta_chosen(const TraceState* s, uint32_t cta) {
    if (s->n_ranges == 0) return true;
    for (uint32_t i = 0; i < s->n_ranges; ++i)
        if (cta >= s->range_lo[i] && cta <= s->range_hi[i]) return true;
    return false;
}

// SANITIZER_MEMORY_DEVICE_FLAG_ATOMIC_WRITE_ONLY (1 << 8) of the pip package's sanitizer_patching.h (13.5): a
// reduction, an atomic whose old value is not read. The CUDA 13.0 toolkit's header has no such enumerator (nvcc
// failed on it on an H100 with that toolkit, 26 Nov 2026), so its value is spelled here; where the API does not
// report the bit, the flag is never set and such an access is told by its read and write flags as before.
constexpr uint32_t FLAG_ATOMIC_WRITE_ONLY = 1u << 8;

static __device__ __forceinline__ uint32_t access_flags(uint32_t f) {
    const bool rd = f & SANITIZER_MEMORY_DEVICE_FLAG_READ, wr = f & SANITIZER_MEMORY_DEVICE_FLAG_WRITE;
    const bool wonly = f & FLAG_ATOMIC_WRITE_ONLY;
    const bool atomic = wonly || (f & SANITIZER_MEMORY_DEVICE_FLAG_ATOMSYS) || (rd && wr);
    if (atomic) return F_ATOMIC | (wonly ? F_WRITE : (F_READ | F_WRITE));
    return wr ? F_WRITE : F_READ;
}

static __device__ __forceinline__ void record(void* userdata, uint64_t pc, uint64_t addr, uint32_t size, uint32_t flags,
                                              uint8_t space) {
    TraceState* s = (TraceState*)userdata;
    if (s == nullptr || (flags & SANITIZER_MEMORY_DEVICE_FLAG_PREFETCH)) return;
    const uint32_t cta = blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y;
    if (!cta_chosen(s, cta)) return;
    const uint32_t mask = active_mask();
    const uint32_t lane = lane_id();
    const uint32_t leader = lowest_lane(mask);
    unsigned long long slot = 0;
    if (lane == leader) {
        slot = atomicAdd(&s->head, 1ULL);  // device memory (trace_state.h)
        if (slot >= s->max_rows) {
            s->max_rows_reached = 1;
            slot = ~0ULL;
        } else if (slot >= s->capacity) {
            // wait for the drain thread to free the slot (the ring holds `capacity` records), backing off (256 ns,
            // doubling to 8 us)
            uint32_t ns = 256;
            if (s->one_poller) {
                // the drained count as warps last read it (device memory); one warp at a time reads the host's, so
                // the bus carries one poll, not one per waiting warp, whose reads held a wrapped ring to 1.2 M records
                // a second on an H100 (15.5 M this way, 27 Nov 2026; PLACEMENT_TRACE_POLL=each is that first form)
                while (slot >= *(volatile unsigned long long*)&s->tail_seen + s->capacity) {
                    if (atomicCAS(&s->polling, 0u, 1u) == 0u) {
                        atomicMax(&s->tail_seen, *(volatile const unsigned long long*)s->tail);
                        atomicExch(&s->polling, 0u);
                    }
                    sleep_ns(ns);
                    if (ns < 8192) ns *= 2;
                }
            } else {
                while (slot >= *(volatile const unsigned long long*)s->tail + s->capacity) {
                    sleep_ns(ns);
                    if (ns < 8192) ns *= 2;
                }
            }
        }
    }
    slot = shfl_idx(mask, slot, leader);
    if (slot == ~0ULL) return;
    AccessRecord* r = &s->ring[slot % s->capacity];
    r->addr[lane] = addr;
    if (lane == leader) {
        for (uint32_t l = 0; l < 32; ++l)
            if (!(mask >> l & 1)) r->addr[l] = 0;
        const uint32_t tid = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
        r->cta = cta;
        r->warp = tid / 32;
        r->pc = (uint32_t)(pc - s->function_pc);
        r->flags = access_flags(flags);
        r->space = space;
        r->width = (uint8_t)size;
        r->pad = 0;
        r->mask = mask;
    }
    warp_sync(mask);
    if (lane == leader) {
        fence_system();
        *(volatile unsigned long long*)&s->ready[slot % s->capacity] = slot + 1;
    }
}

extern "C" __device__ __noinline__ SanitizerPatchResult placement_global(void* userdata, uint64_t pc, void* ptr,
                                                                         uint32_t size, uint32_t flags, const void*) {
    record(userdata, pc, (uint64_t)ptr, size, flags, SPACE_GLOBAL);
    return SANITIZER_PATCH_SUCCESS;
}

// For shared and local accesses `ptr` is already the offset in the window (sanitizer_patching.h).
extern "C" __device__ __noinline__ SanitizerPatchResult placement_shared(void* userdata, uint64_t pc, void* ptr,
                                                                         uint32_t size, uint32_t flags, const void*) {
    record(userdata, pc, (uint64_t)ptr, size, flags, SPACE_SHARED);
    return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult placement_local(void* userdata, uint64_t pc, void* ptr,
                                                                        uint32_t size, uint32_t flags, const void*) {
    record(userdata, pc, (uint64_t)ptr, size, flags, SPACE_LOCAL);
    return SANITIZER_PATCH_SUCCESS;
}
