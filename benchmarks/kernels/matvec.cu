// Textbook dense matrix-vector product y = A x, one row of A per thread (A rows x cols,
// row-major: the lanes of a warp read A `cols` floats apart, uncoalesced; every lane reads the
// same x[j], a broadcast). A, x, y are plain global arrays (the sample placement).
extern "C" __global__ void matvec(const float *A, const float *x, float *y, int rows, int cols)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows) {
        float s = 0.0f;
        for (int j = 0; j < cols; j++) s += A[i * cols + j] * x[j];
        y[i] = s;
    }
}
