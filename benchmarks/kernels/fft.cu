// SHOC FFT FFT512_device<float2>: one 512-point FFT per block of 64 threads. Each thread loads 8
// points (stride 64), runs radix-8 butterflies in registers, and exchanges data twice through
// smem[8*8*9] (x parts, then y parts): stores at hi*8+lo + i*66 and loads at lo*66+hi + i*8
// (first exchange), stores at hi*8+lo + i*72 and loads at hi*72+lo + i*8 (second).
#define TWO_PI 6.283185307f
__device__ inline void fft2(float2 &a, float2 &b)
{
    float2 t = a;
    a.x += b.x; a.y += b.y;
    b.x = t.x - b.x; b.y = t.y - b.y;
}
__device__ inline float2 cmul(float2 a, float2 b) { return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
__device__ inline void fft8(float2 *a)
{
    fft2(a[0], a[4]); fft2(a[1], a[5]); fft2(a[2], a[6]); fft2(a[3], a[7]);
    const float r = 0.70710678f;
    a[5] = cmul(a[5], make_float2(r, -r)); a[6] = make_float2(a[6].y, -a[6].x); a[7] = cmul(a[7], make_float2(-r, -r));
    fft2(a[0], a[2]); fft2(a[1], a[3]); fft2(a[4], a[6]); fft2(a[5], a[7]);
    a[3] = make_float2(a[3].y, -a[3].x); a[7] = make_float2(a[7].y, -a[7].x);
    fft2(a[0], a[1]); fft2(a[2], a[3]); fft2(a[4], a[5]); fft2(a[6], a[7]);
}
__device__ inline void twiddle8(float2 *a, int i, int n)
{
    for (int j = 1; j < 8; j++) {
        float s, c;
        __sincosf(-TWO_PI * j * i / n, &s, &c);
        a[j] = cmul(a[j], make_float2(c, s));
    }
}
__device__ inline void exchange(float2 *a, float *s, int ds, float *l, int dl)
{
    for (int i = 0; i < 8; i++) s[i * ds] = a[i].x;
    __syncthreads();
    for (int i = 0; i < 8; i++) a[i].x = l[i * dl];
    __syncthreads();
    for (int i = 0; i < 8; i++) s[i * ds] = a[i].y;
    __syncthreads();
    for (int i = 0; i < 8; i++) a[i].y = l[i * dl];
    __syncthreads();
}
extern "C" __global__ void fft(float2 *work)
{
    int tid = threadIdx.x, hi = tid >> 3, lo = tid & 7;
    work += (blockIdx.y * gridDim.x + blockIdx.x) * 512 + tid;
    __shared__ float smem[8 * 8 * 9];
    float2 a[8];
    for (int i = 0; i < 8; i++) a[i] = work[i * 64];
    fft8(a);
    twiddle8(a, tid, 512);
    exchange(a, &smem[hi * 8 + lo], 66, &smem[lo * 66 + hi], 8);
    fft8(a);
    twiddle8(a, hi, 64);
    exchange(a, &smem[hi * 8 + lo], 72, &smem[hi * 72 + lo], 8);
    fft8(a);
    for (int i = 0; i < 8; i++) work[i * 64] = a[i];
}
