// Textbook 1D convolution (Kirk & Hwu, Programming Massively Parallel Processors, the basic
// kernel, with the input padded so that no ghost test is needed: in holds n + mask_width - 1
// elements): out[i] = sum_j in[i + j] * mask[j], one output per thread. in, mask and out are
// plain global arrays (the sample placement); mask is the textbook candidate for constant
// memory, in for a cache or a staged tile.
extern "C" __global__ void conv1d(const float *in, const float *mask, float *out, int mask_width, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int j = 0; j < mask_width; j++) s += in[i + j] * mask[j];
        out[i] = s;
    }
}
