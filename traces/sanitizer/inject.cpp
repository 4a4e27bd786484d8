// Injection library of `placement trace` (loaded by the CUDA driver through CUDA_INJECTION64_PATH).
//
// Resource callbacks keep the live device allocations and patch every loaded module with the device callbacks
// of patches.cu (its cubin is kept for nvdisasm when PLACEMENT_TRACE_CUBIN_DIR is set); driver-API callbacks on
// cuLaunchKernel(Ex) keep the kernel's parameter values; the launch callback picks the launch
// (PLACEMENT_TRACE_KERNEL: name or ECMAScript regex on the demangled name, PLACEMENT_TRACE_LAUNCH: N-th match),
// hands the device callbacks their state (sanitizerSetCallbackData with the launch's function; the CUDA 13
// memory calls take the launch's stream handle, sanitizerAllocHost its context), and writes the record file
// (traces/sanitizer/records.py) at PLACEMENT_TRACE_OUT: launch record, allocations, the access records a drain
// thread copies out of the ring as it fills, and the end record. Every launch's name goes to
// PLACEMENT_TRACE_LAUNCHES (one "mangled<TAB>demangled" line each) so the command can list them.
// Timing mode (PLACEMENT_TRACE_TIME_OUT set, `placement trace --time`): nothing is patched or recorded; the
// chosen launch is timed with a pair of CUDA events on its stream (recorded in the launch-begin and launch-end
// callbacks) and "<ms>\t<device name>" written there. Driver calls made from inside a callback re-enter it on
// the same thread: those calls return at once (t_inside).
// Warps that find the ring full read the host's drained count one at a time and share it in device memory; with
// PLACEMENT_TRACE_POLL=each (benchmarks/bench_trace.py --poll each, the first form) every waiting warp polls it
// across the bus, which held a wrapped ring to 1.2 M records a second on an H100 (15.5 M one at a time, 27 Nov 2026).
// PLACEMENT_TRACE_STATS (benchmarks/bench_trace.py): after a traced launch, "<seconds>\t<records>\t<write
// s>\t<wait s>\t<chunks>" is written there: the wall time from the launch-begin callback's end (state and ring set up)
// to the drain thread's end, which holds the patched kernel's run and the copying out of its records; the records;
// the drain thread's seconds writing chunks out and waiting for the next slot; its chunks.
// Run on an H100 (driver 580.159.04, 26 Nov 2026; README, "Trace your own kernel").
#include <cuda.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <sanitizer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "trace_state.h"

namespace {

// The parameters of the driver calls behind a launch, as generated_cuda_meta.h declares them (that header
// needs the driver's internal v1 types, so the two used here are repeated).
struct cuLaunchKernel_params {
    CUfunction f;
    unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    CUstream hStream;
    void** kernelParams;
    void** extra;
};
struct cuLaunchKernelEx_params {
    const CUlaunchConfig* config;
    CUfunction f;
    void** kernelParams;
    void** extra;
};

// The runtime's launches (cudaLaunchKernel, cudaLaunchKernelExC and their _ptsz forms), as
// generated_cuda_runtime_api_meta.h declares them: their host stub is no CUfunction, so the arguments are
// taken for the next launch callback on the same thread.
struct Dim3 {
    unsigned x, y, z;
};
struct cudaLaunchKernel_params {
    const void* func;
    Dim3 gridDim, blockDim;
    void** args;
    size_t sharedMem;
    void* stream;
};
struct cudaLaunchConfig {
    Dim3 gridDim, blockDim;
    size_t dynamicSmemBytes;
    void* stream;
    void* attrs;
    unsigned numAttrs;
};
struct cudaLaunchKernelExC_params {
    const cudaLaunchConfig* config;
    const void* func;
    void** args;
};

struct Params {
    CUfunction f = nullptr;
    void** kernel_params = nullptr;
    unsigned shared_bytes = 0;
};

std::mutex g_mutex;
std::map<uint64_t, uint64_t> g_allocs;  // base -> size of live device allocations
thread_local Params g_last_launch;  // the API call behind the next launch callback on this thread (f null: runtime)
uint64_t g_seen = 0, g_matched = 0;
bool g_done = false, g_active = false;
TraceState* g_state = nullptr;  // the host copy (pinned host memory, trace_state.h)
TraceState* g_dev = nullptr;    // the device copy (device memory): the callbacks' userdata
FILE* g_out = nullptr;
std::thread g_drain;
std::atomic<bool> g_stop{false};
std::string g_patches;
std::chrono::steady_clock::time_point g_t0;  // the traced launch's start (PLACEMENT_TRACE_STATS)
bool g_time_mode = false;  // PLACEMENT_TRACE_TIME_OUT: time the chosen launch, patch nothing
bool g_timing = false;
CUevent g_ev0 = nullptr, g_ev1 = nullptr;
thread_local bool t_inside = false;  // in a callback on this thread: a nested one (our own driver calls) returns

const char* env(const char* name, const char* dflt = nullptr) {
    const char* v = getenv(name);
    return v && *v ? v : dflt;
}

void die(const char* what, int code) {
    fprintf(stderr, "placement trace: %s (sanitizer error %d)\n", what, code);
    _exit(86);  // the command reads 86 as "the tracer failed"
}

#define CHECK(call)                             \
    do {                                        \
        SanitizerResult r_ = (call);            \
        if (r_ != SANITIZER_SUCCESS) die(#call, (int)r_); \
    } while (0)

void write_chunk(uint32_t kind, uint32_t count, const void* data, size_t bytes) {
    uint32_t h[2] = {kind, count};
    fwrite(h, sizeof h, 1, g_out);
    if (bytes) fwrite(data, 1, bytes, g_out);
}

std::string demangle(const char* name) {
    int status = 0;
    char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string out = (status == 0 && d) ? d : name;
    free(d);
    return out;
}

bool matches(const char* pattern, const std::string& mangled, const std::string& demangled) {
    if (!pattern) return true;
    std::string base = demangled.substr(0, demangled.find('('));
    std::string last = base.substr(base.rfind("::") == std::string::npos ? 0 : base.rfind("::") + 2);
    if (mangled == pattern || demangled == pattern || base == pattern || last == pattern) return true;
    try {
        return std::regex_search(demangled, std::regex(pattern));
    } catch (const std::regex_error&) {
        return false;
    }
}

template <typename F>
F driver_fn(const char* name) {
    // from libcuda itself: the CUDA runtime (linked statically into the program) opens it RTLD_LOCAL, so its symbols
    // are not in the global scope, and dlsym(RTLD_DEFAULT, ...) found none of them on an H100 (26 Nov 2026): no
    // registers, no parameters, no events for --time
    static void* lib = [] {
        void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        return h ? h : RTLD_DEFAULT;
    }();
    return (F)dlsym(lib, name);
}

// When the next slot is not ready, the drain thread yields for up to DRAIN_SPIN_US before it sleeps DRAIN_SLEEP_US.
// On an H100 (26 Nov 2026, benchmarks/bench_trace.py) a launch of 98,304 records into a ring of 262,144 took 6.4 ms
// this way, 11.6 ms with a 50 us sleep at every miss. Once the ring wraps, the drain thread's writing bounds the
// recording: 15.5 M records a second at n = 2^24, 99 ms writing and 2 ms waiting (27 Nov 2026).
constexpr double DRAIN_SPIN_US = 500.0;
constexpr int DRAIN_SLEEP_US = 50;
double g_drain_write_s = 0, g_drain_wait_s = 0;  // PLACEMENT_TRACE_STATS
unsigned long long g_drain_chunks = 0;

void drain() {  // write ready records out of the ring, in slot order, as they come
    unsigned long long next = 0;
    const unsigned long long capacity = g_state->capacity;
    auto idle_since = std::chrono::steady_clock::now();
    bool idle = false;
    using clock = std::chrono::steady_clock;
    auto since = clock::now();  // the drain's seconds writing and waiting (PLACEMENT_TRACE_STATS)
    const auto lap = [&since](double& into) {
        const auto now = clock::now();
        into += std::chrono::duration<double>(now - since).count();
        since = now;
    };
    for (;;) {
        // the ready slots from `next` on, up to 4096 and the ring's end: written from where they lie, and freed
        const unsigned long long first = next % capacity;
        uint32_t count = 0;
        while (count < 4096 && first + count < capacity &&
               *(volatile unsigned long long*)&g_state->ready[first + count] == next + count + 1)
            ++count;
        if (count) {
            lap(g_drain_wait_s);
            write_chunk(3, count, g_state->ring + first, (size_t)count * sizeof(AccessRecord));
            lap(g_drain_write_s);
            ++g_drain_chunks;
            next += count;
            __atomic_store_n(&g_state->drained, next, __ATOMIC_RELEASE);
            idle = false;
        } else if (g_stop.load()) {
            unsigned long long reserved = __atomic_load_n(&g_state->head, __ATOMIC_ACQUIRE);
            if (next >= reserved || next >= g_state->max_rows) {
                lap(g_drain_wait_s);
                break;
            }
        } else {
            const auto now = std::chrono::steady_clock::now();
            if (!idle) idle = true, idle_since = now;
            if (std::chrono::duration<double, std::micro>(now - idle_since).count() < DRAIN_SPIN_US)
                std::this_thread::yield();
            else
                std::this_thread::sleep_for(std::chrono::microseconds(DRAIN_SLEEP_US));
        }
    }
}

void begin_launch(Sanitizer_LaunchData* ld) {
    const std::string mangled = ld->functionName ? ld->functionName : "?";
    const std::string demangled = demangle(mangled.c_str());
    if (const char* lf = env("PLACEMENT_TRACE_LAUNCHES")) {
        if (FILE* f = fopen(lf, "a")) {
            fprintf(f, "%s\t%s\n", mangled.c_str(), demangled.c_str());
            fclose(f);
        }
    }
    const uint64_t index = g_seen++;
    if (g_done || !matches(env("PLACEMENT_TRACE_KERNEL"), mangled, demangled)) return;
    if (g_matched++ != strtoull(env("PLACEMENT_TRACE_LAUNCH", "0"), nullptr, 10)) return;
    if (g_time_mode) {  // the launch's events: start now, on its stream, before the kernel is queued
        g_done = true;
        auto create = driver_fn<CUresult (*)(CUevent*, unsigned)>("cuEventCreate");
        auto record = driver_fn<CUresult (*)(CUevent, CUstream)>("cuEventRecord");
        if (!create || !record || create(&g_ev0, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
            create(&g_ev1, CU_EVENT_DEFAULT) != CUDA_SUCCESS || record(g_ev0, ld->stream) != CUDA_SUCCESS)
            die("cuEventCreate / cuEventRecord for --time", 0);
        g_timing = true;
        return;
    }
    g_done = g_active = true;

    // state and ring in pinned host memory that the device reaches (the launch's context)
    const unsigned long long capacity = strtoull(env("PLACEMENT_TRACE_RING", "262144"), nullptr, 10);
    void* p = nullptr;
    CHECK(sanitizerAllocHost(ld->context, &p, sizeof(TraceState)));
    g_state = (TraceState*)p;
    memset(g_state, 0, sizeof(TraceState));
    CHECK(sanitizerAllocHost(ld->context, &p, capacity * sizeof(AccessRecord)));
    g_state->ring = (AccessRecord*)p;
    CHECK(sanitizerAllocHost(ld->context, &p, capacity * sizeof(unsigned long long)));
    g_state->ready = (unsigned long long*)p;
    memset(g_state->ready, 0, capacity * sizeof(unsigned long long));
    g_state->capacity = capacity;
    g_state->max_rows = strtoull(env("PLACEMENT_TRACE_MAX_ROWS", "18446744073709551615"), nullptr, 10);
    g_state->one_poller = strcmp(env("PLACEMENT_TRACE_POLL", "one"), "each") != 0;
    uint64_t fpc = 0, fsize = 0;
    CHECK(sanitizerGetFunctionPcAndSize(ld->module, ld->functionName, &fpc, &fsize));
    g_state->function_pc = fpc;
    g_state->tail = &g_state->drained;

    const uint32_t nctas = ld->gridDim_x * ld->gridDim_y * ld->gridDim_z;
    const uint32_t threads = ld->blockDim_x * ld->blockDim_y * ld->blockDim_z;
    int regs = 0, static_smem = 0;
    auto getattr = driver_fn<CUresult (*)(int*, CUfunction_attribute, CUfunction)>("cuFuncGetAttribute");
    if (getattr) {
        getattr(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, ld->function);
        getattr(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, ld->function);
    }
    // the launch call's parameters, caught on this thread since the last launch began (cleared there); its function
    // handle is not compared with ld->function: a runtime launch passes the driver a CUkernel, not this CUfunction
    const bool have_call = g_last_launch.kernel_params != nullptr;
    const unsigned dyn = have_call ? g_last_launch.shared_bytes : 0;
    if (const char* spec = env("PLACEMENT_TRACE_CTAS")) {  // "w:W" or "a-b,c-d" (traces/sanitizer/ctas.py)
        if (spec[0] == 'w') {
            int per_sm = 0, sms = 0;
            auto occ = driver_fn<CUresult (*)(int*, CUfunction, int, size_t)>("cuOccupancyMaxActiveBlocksPerMultiprocessor");
            auto attr = driver_fn<CUresult (*)(int*, CUdevice_attribute, CUdevice)>("cuDeviceGetAttribute");
            if (occ) occ(&per_sm, ld->function, (int)threads, dyn);
            if (attr) attr(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ld->device);
            unsigned long long n = strtoull(spec + 2, nullptr, 10) * (unsigned long long)(per_sm > 0 ? per_sm : 1) * (sms > 0 ? sms : 1);
            g_state->n_ranges = 1;
            g_state->range_lo[0] = 0;
            g_state->range_hi[0] = (uint32_t)((n < nctas ? n : nctas) - 1);
        } else {
            const char* s = spec;
            while (*s && g_state->n_ranges < MAX_CTA_RANGES) {
                char* e;
                unsigned long a = strtoul(s, &e, 10), b = a;
                if (*e == '-') b = strtoul(e + 1, &e, 10);
                g_state->range_lo[g_state->n_ranges] = (uint32_t)a;
                g_state->range_hi[g_state->n_ranges++] = (uint32_t)b;
                s = *e == ',' ? e + 1 : e;
                if (e == s && *s) break;
            }
        }
    }

    // the launch record: records.py LAUNCH_DTYPE, the parameter list, the parameter buffer, the name
    std::vector<uint32_t> plist;
    std::vector<uint8_t> pbuf;
    auto pinfo = driver_fn<CUresult (*)(CUfunction, size_t, size_t*, size_t*)>("cuFuncGetParamInfo");
    if (pinfo && have_call) {
        for (size_t i = 0;; ++i) {
            size_t off = 0, size = 0;
            if (pinfo(ld->function, i, &off, &size) != CUDA_SUCCESS) break;
            plist.push_back((uint32_t)off);
            plist.push_back((uint32_t)size);
            if (pbuf.size() < off + size) pbuf.resize(off + size);
            memcpy(pbuf.data() + off, g_last_launch.kernel_params[i], size);
        }
    }
    struct {
        uint32_t launch, grid[3], block[3], regs, static_smem, dynamic_smem, n_params, param_bytes, name_bytes, flags;
        uint64_t shared_base, local_base;
    } h = {(uint32_t)index, {ld->gridDim_x, ld->gridDim_y, ld->gridDim_z}, {ld->blockDim_x, ld->blockDim_y, ld->blockDim_z},
           (uint32_t)regs, (uint32_t)static_smem, dyn, (uint32_t)(plist.size() / 2), (uint32_t)pbuf.size(),
           (uint32_t)mangled.size(), 0, 0, 0};
    static_assert(sizeof(h) == 72, "launch record must match records.py LAUNCH_DTYPE");
    std::vector<uint8_t> body(sizeof h);
    memcpy(body.data(), &h, sizeof h);
    body.insert(body.end(), (uint8_t*)plist.data(), (uint8_t*)(plist.data() + plist.size()));
    body.insert(body.end(), pbuf.begin(), pbuf.end());
    body.insert(body.end(), mangled.begin(), mangled.end());
    write_chunk(1, (uint32_t)body.size(), body.data(), body.size());
    std::vector<uint64_t> allocs;
    for (auto& kv : g_allocs) {
        allocs.push_back(kv.first);
        allocs.push_back(kv.second);
    }
    if (!allocs.empty()) write_chunk(2, (uint32_t)(allocs.size() / 2), allocs.data(), allocs.size() * 8);
    // the device copy, queued on the launch's stream before the kernel
    CHECK(sanitizerAlloc(ld->context, &p, sizeof(TraceState)));
    g_dev = (TraceState*)p;
    CHECK(sanitizerMemcpyHostToDeviceAsync(g_dev, g_state, sizeof(TraceState), ld->hStream));
    CHECK(sanitizerSetCallbackData(ld->function, g_dev));
    g_stop = false;
    g_t0 = std::chrono::steady_clock::now();
    g_drain = std::thread(drain);
}

void end_timing(Sanitizer_LaunchData* ld) {
    g_timing = false;
    auto record = driver_fn<CUresult (*)(CUevent, CUstream)>("cuEventRecord");
    auto sync = driver_fn<CUresult (*)(CUevent)>("cuEventSynchronize");
    auto elapsed = driver_fn<CUresult (*)(float*, CUevent, CUevent)>("cuEventElapsedTime");
    auto name = driver_fn<CUresult (*)(char*, int, CUdevice)>("cuDeviceGetName");
    float ms = 0;
    if (!record || !sync || !elapsed || record(g_ev1, ld->stream) != CUDA_SUCCESS || sync(g_ev1) != CUDA_SUCCESS ||
        elapsed(&ms, g_ev0, g_ev1) != CUDA_SUCCESS)
        die("cuEventRecord / cuEventElapsedTime for --time", 0);
    char device[256] = "unknown";
    if (name) name(device, sizeof device, ld->device);
    fprintf(g_out, "%.6f\t%s\n", ms, device);
    fflush(g_out);
}

void end_launch(Sanitizer_LaunchData* ld) {
    if (g_timing) return end_timing(ld);
    if (!g_active) return;
    g_active = false;
    CHECK(sanitizerStreamSynchronize(ld->hStream));
    TraceState counted;  // what the device counted: the slots reserved, whether --max-rows was reached
    CHECK(sanitizerMemcpyDeviceToHost(&counted, g_dev, sizeof counted, ld->hStream));
    g_state->max_rows_reached = counted.max_rows_reached;
    __atomic_store_n(&g_state->head, counted.head, __ATOMIC_RELEASE);  // before g_stop: the drain thread's end
    CHECK(sanitizerFree(ld->context, g_dev));
    g_dev = nullptr;
    g_stop = true;
    g_drain.join();
    CHECK(sanitizerSetCallbackData(ld->function, nullptr));
    uint64_t end[2] = {__atomic_load_n(&g_state->drained, __ATOMIC_ACQUIRE), g_state->max_rows_reached ? 1ull : 0ull};
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - g_t0).count();
    write_chunk(4, sizeof end, end, sizeof end);
    fflush(g_out);
    if (const char* stats = env("PLACEMENT_TRACE_STATS")) {
        if (FILE* f = fopen(stats, "w")) {
            fprintf(f, "%.9f\t%llu\t%.6f\t%.6f\t%llu\n", seconds, (unsigned long long)end[0], g_drain_write_s,
                    g_drain_wait_s, g_drain_chunks);
            fclose(f);
        }
    }
}

struct Inside {  // marks this thread as in a callback for the callback's duration
    Inside() { t_inside = true; }
    ~Inside() { t_inside = false; }
};

void SANITIZERAPI callback(void*, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* data) {
    if (t_inside) return;  // a driver call of our own, from inside a callback
    Inside inside;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (domain == SANITIZER_CB_DOMAIN_RESOURCE) {
        if (cbid == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_ALLOC) {
            auto* m = (const Sanitizer_ResourceMemoryData*)data;
            g_allocs[m->address] = m->size;
        } else if (cbid == SANITIZER_CBID_RESOURCE_DEVICE_MEMORY_FREE) {
            g_allocs.erase(((const Sanitizer_ResourceMemoryData*)data)->address);
        } else if (cbid == SANITIZER_CBID_RESOURCE_MODULE_LOADED) {
            auto* m = (const Sanitizer_ResourceModuleData*)data;
            if (g_time_mode) return;  // timed as the program runs: nothing patched
            if (const char* dir = env("PLACEMENT_TRACE_CUBIN_DIR")) {  // for nvdisasm
                char path[4096];
                snprintf(path, sizeof path, "%s/module-%p.cubin", dir, (void*)m->module);
                if (FILE* f = fopen(path, "wb")) {
                    fwrite(m->pCubin, 1, m->cubinSize, f);
                    fclose(f);
                }
            }
            CHECK(sanitizerAddPatchesFromFile(g_patches.c_str(), m->context));
            CHECK(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, m->module, "placement_global"));
            CHECK(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS, m->module, "placement_shared"));
            CHECK(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_LOCAL_MEMORY_ACCESS, m->module, "placement_local"));
            CHECK(sanitizerPatchModule(m->module));
        }
    } else if (domain == SANITIZER_CB_DOMAIN_DRIVER_API) {
        auto* c = (const Sanitizer_CallbackData*)data;
        if (c->callbackSite != SANITIZER_API_ENTER) return;
        if (cbid == SANITIZER_CBID_DRIVER_API_cuLaunchKernel || cbid == SANITIZER_CBID_DRIVER_API_cuLaunchKernel_ptsz) {
            auto* p = (const cuLaunchKernel_params*)c->functionParams;  // the _ptsz form has the same layout
            g_last_launch = {p->f, p->kernelParams, p->sharedMemBytes};
        } else if (cbid == SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx ||
                   cbid == SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx_ptsz) {
            auto* p = (const cuLaunchKernelEx_params*)c->functionParams;
            g_last_launch = {p->f, p->kernelParams, p->config ? p->config->sharedMemBytes : 0u};
        }
    } else if (domain == SANITIZER_CB_DOMAIN_RUNTIME_API) {
        auto* c = (const Sanitizer_CallbackData*)data;
        if (c->callbackSite != SANITIZER_API_ENTER) return;
        if (cbid == SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel || cbid == SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel_ptsz) {
            auto* p = (const cudaLaunchKernel_params*)c->functionParams;
            g_last_launch = {nullptr, p->args, (unsigned)p->sharedMem};
        } else if (cbid == SANITIZER_CBID_RUNTIME_API_cudaLaunchKernelExC ||
                   cbid == SANITIZER_CBID_RUNTIME_API_cudaLaunchKernelExC_ptsz) {
            auto* p = (const cudaLaunchKernelExC_params*)c->functionParams;
            g_last_launch = {nullptr, p->args, p->config ? (unsigned)p->config->dynamicSmemBytes : 0u};
        }
    } else if (domain == SANITIZER_CB_DOMAIN_LAUNCH) {
        auto* ld = (Sanitizer_LaunchData*)data;
        if (cbid == SANITIZER_CBID_LAUNCH_BEGIN) {
            begin_launch(ld);
            g_last_launch = Params();
        }
        else if (cbid == SANITIZER_CBID_LAUNCH_END) end_launch(ld);
    }
}

}  // namespace

extern "C" int InitializeInjection() {
    const char* timed = env("PLACEMENT_TRACE_TIME_OUT");
    const char* out = timed ? timed : env("PLACEMENT_TRACE_OUT");
    const char* patches = env("PLACEMENT_TRACE_PATCHES");
    if (!out || (!patches && !timed)) {
        fprintf(stderr, "placement trace: PLACEMENT_TRACE_OUT and PLACEMENT_TRACE_PATCHES (or PLACEMENT_TRACE_TIME_OUT) must be set\n");
        _exit(86);
    }
    g_time_mode = timed != nullptr;
    g_patches = patches ? patches : "";
    g_out = fopen(out, timed ? "w" : "wb");
    if (!g_out) {
        fprintf(stderr, "placement trace: cannot write %s\n", out);
        _exit(86);
    }
    if (!g_time_mode) {
        const char magic[8] = {'P', 'L', 'S', 'N', 'T', 'R', 'C', 0};
        uint32_t version[2] = {1, 16};
        fwrite(magic, 8, 1, g_out);
        fwrite(version, sizeof version, 1, g_out);
    }
    Sanitizer_SubscriberHandle handle;
    CHECK(sanitizerSubscribe(&handle, callback, nullptr));
    CHECK(sanitizerEnableDomain(1, handle, SANITIZER_CB_DOMAIN_RESOURCE));
    CHECK(sanitizerEnableDomain(1, handle, SANITIZER_CB_DOMAIN_LAUNCH));
    CHECK(sanitizerEnableDomain(1, handle, SANITIZER_CB_DOMAIN_DRIVER_API));
    CHECK(sanitizerEnableDomain(1, handle, SANITIZER_CB_DOMAIN_RUNTIME_API));
    return 0;
}
