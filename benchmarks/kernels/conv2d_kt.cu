// 2D convolution of Kernel Tuner's benchmark (benchmark_hub convolution_milo): our own source,
// written from the kernel's description. The sample variant, which the generator follows,
// reads the image with plain global loads (use_shmem = 0, read_only = 0); the other two
// variants are compiled by the tests only, for comparison:
//   read_only = 1: the image is read through the read-only data cache (__ldg);
//   use_shmem = 1: each block first copies its input tile, (block x tile + filter - 1) in
//                  each dimension, into shared memory, then __syncthreads(), then computes
//                  from shared memory.
//
// output: image_width x image_height floats, row pitch image_width.
// input:  (image_height + FH - 1) x (image_width + FW - 1) floats, row pitch IW.
// d_filter: the FH x FW filter in __constant__ memory.
// Each thread of a (block_size_x, block_size_y) block computes tile_size_y x tile_size_x
// outputs at (by0 + ty + a*block_size_y, bx0 + tx + b*block_size_x); the loops run over the
// filter row i, filter column j, then the tile (a, b), all unrolled. Every size is a
// compile-time macro, as in Kernel Tuner (which passes the tunable parameters as -D).
#ifndef block_size_x
#define block_size_x 32
#endif
#ifndef block_size_y
#define block_size_y 4
#endif
#ifndef tile_size_x
#define tile_size_x 2
#endif
#ifndef tile_size_y
#define tile_size_y 2
#endif
#ifndef image_width
#define image_width 4096
#endif
#ifndef image_height
#define image_height 4096
#endif
#ifndef read_only
#define read_only 0
#endif
#ifndef use_shmem
#define use_shmem 0
#endif
#define FW 15
#define FH 15
#define IW (image_width + FW - 1)

#if read_only
#define LOAD(p, k) __ldg((p) + (k))
#else
#define LOAD(p, k) (p)[k]
#endif

__constant__ float d_filter[FH * FW];

extern "C" __global__ void conv2d_kt(float *output, const float *input)
{
    const int ty = threadIdx.y;
    const int tx = threadIdx.x;
    const int by0 = blockIdx.y * block_size_y * tile_size_y;
    const int bx0 = blockIdx.x * block_size_x * tile_size_x;
    const int y0 = by0 + ty;
    const int x0 = bx0 + tx;
#if use_shmem
#define SH_ROWS (block_size_y * tile_size_y + FH - 1)
#define SH_COLS (block_size_x * tile_size_x + FW - 1)
    __shared__ float tile[SH_ROWS][SH_COLS];
#pragma unroll
    for (int r = ty; r < SH_ROWS; r += block_size_y)
#pragma unroll
        for (int c = tx; c < SH_COLS; c += block_size_x) tile[r][c] = LOAD(input, (by0 + r) * IW + bx0 + c);
    __syncthreads();
#endif
    // A thread whose first output lies outside the image has no output inside it.
    if (y0 >= image_height || x0 >= image_width) return;

    float sum[tile_size_y][tile_size_x];
#pragma unroll
    for (int a = 0; a < tile_size_y; a++)
#pragma unroll
        for (int b = 0; b < tile_size_x; b++) sum[a][b] = 0.0f;

#pragma unroll
    for (int i = 0; i < FH; i++)
#pragma unroll
        for (int j = 0; j < FW; j++)
#pragma unroll
            for (int a = 0; a < tile_size_y; a++)
#pragma unroll
                for (int b = 0; b < tile_size_x; b++) {
#if use_shmem
                    const float v = tile[ty + a * block_size_y + i][tx + b * block_size_x + j];
#else
                    const float v = LOAD(input, (y0 + a * block_size_y + i) * IW + x0 + b * block_size_x + j);
#endif
                    sum[a][b] += v * d_filter[i * FW + j];
                }

#pragma unroll
    for (int a = 0; a < tile_size_y; a++)
#pragma unroll
        for (int b = 0; b < tile_size_x; b++) {
            const int y = y0 + a * block_size_y;
            const int x = x0 + b * block_size_x;
            if (y < image_height && x < image_width) output[y * image_width + x] = sum[a][b];
        }
}
