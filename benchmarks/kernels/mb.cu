// Hong & Kim (2009) Table 4 micro-benchmarks: a loop of ITERS iterations with LOADS loads and
// a chain of dependent FP (FFMA) and integer work per iteration. Coalesced: lane l of warp w
// reads element it*T + w*32 + l; uncoalesced: it*T + l*NW + w (NW = warps in the grid).
struct Arrs { const float *p[6]; };
#define MB(NAME, LOADS, FP, COAL)                                                          \
extern "C" __global__ void NAME(Arrs arrs, float *out, int iters, int T, int NW) \
{                                                                                          \
    int gtid = blockIdx.x * blockDim.x + threadIdx.x;                                      \
    int w = gtid >> 5, l = gtid & 31;                                                      \
    int e = COAL ? gtid : l * NW + w;                                                      \
    float acc = 0.0f, x = (float)gtid;                                                     \
    for (int it = 0; it < iters; ++it) {                                                   \
        _Pragma("unroll") for (int k = 0; k < LOADS; ++k) acc += arrs.p[k][it * T + e];      \
        _Pragma("unroll") for (int f = 0; f < FP; ++f) x = x * 0.999f + acc;               \
    }                                                                                      \
    out[gtid] = x + acc;                                                                   \
}
MB(mb1_c, 0, 20, 1) MB(mb1_uc, 0, 20, 0)
MB(mb2_c, 1, 8, 1)  MB(mb2_uc, 1, 8, 0)
MB(mb3_c, 1, 20, 1) MB(mb3_uc, 1, 20, 0)
MB(mb4_c, 2, 12, 1) MB(mb4_uc, 2, 12, 0)
MB(mb5_c, 2, 20, 1) MB(mb5_uc, 2, 20, 0)
MB(mb6_c, 4, 20, 1) MB(mb6_uc, 4, 20, 0)
MB(mb7_c, 6, 20, 1) MB(mb7_uc, 6, 20, 0)
