// Multi-channel 2D convolution, one output per thread (the textbook convolution layer with one
// output feature map): out[y][x] = sum_c sum_i sum_j in[c][y + i][x + j] * mask[c][i][j].
// in holds `channels` planes of (height + K - 1) x (width + K - 1) floats (padded: no ghost
// test), mask `channels` K x K planes, out height x width; all plain global arrays (the sample
// placement). The mask edge K is a compile-time constant (one kernel per K, i and j unrolled);
// the channel loop runs over a runtime count.
template <int K>
__device__ void conv2d_channels_body(const float *in, const float *mask, float *out, int channels, int width, int height)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) {
        const int iw = width + K - 1;
        const int ih = height + K - 1;
        float s = 0.0f;
        for (int c = 0; c < channels; c++) {
#pragma unroll
            for (int i = 0; i < K; i++)
#pragma unroll
                for (int j = 0; j < K; j++) s += in[(c * ih + y + i) * iw + x + j] * mask[(c * K + i) * K + j];
        }
        out[y * width + x] = s;
    }
}
extern "C" __global__ void conv2d_channels_k3(const float *in, const float *mask, float *out, int channels, int width, int height)
{
    conv2d_channels_body<3>(in, mask, out, channels, width, height);
}
extern "C" __global__ void conv2d_channels_k5(const float *in, const float *mask, float *out, int channels, int width, int height)
{
    conv2d_channels_body<5>(in, mask, out, channels, width, height);
}
extern "C" __global__ void conv2d_channels_k7(const float *in, const float *mask, float *out, int channels, int width, int height)
{
    conv2d_channels_body<7>(in, mask, out, channels, width, height);
}
