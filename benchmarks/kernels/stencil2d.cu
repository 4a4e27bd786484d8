// SHOC Stencil2D StencilKernel<float>: block (1, lszCol), each thread a strip of nStripItems rows,
// 9-point stencil from a shared tile with a 1-wide halo (dynamic shared memory).
__device__ int ToFlatIdx(int row, int col, int rowWidth) { return (row + 1) * (rowWidth + 2) + (col + 1); }
extern "C" __global__ void stencil2d(const float *data, float *newData, int alignment, int nStripItems,
                                     float wCenter, float wCardinal, float wDiagonal)
{
    int gidRow = blockIdx.x, gidCol = blockIdx.y, gszCol = gridDim.y;
    int lidRow = threadIdx.x, lidCol = threadIdx.y;
    int lszRow = nStripItems, lszCol = blockDim.y;
    int gRow = gidRow * lszRow + lidRow;
    int gCol = gidCol * lszCol + lidCol;
    int nCols = gszCol * lszCol + 2;
    int nPaddedCols = nCols + (((nCols % alignment) == 0) ? 0 : (alignment - (nCols % alignment)));
    int gRowWidth = nPaddedCols - 2;
    extern __shared__ float sh[];
    int lRowWidth = lszCol;
    for (int i = 0; i < (lszRow + 2); i++)
        sh[ToFlatIdx(lidRow - 1 + i, lidCol, lRowWidth)] = data[ToFlatIdx(gRow - 1 + i, gCol, gRowWidth)];
    if (lidCol == 0) {
        for (int i = 0; i < (lszRow + 2); i++)
            sh[ToFlatIdx(lidRow - 1 + i, lidCol - 1, lRowWidth)] = data[ToFlatIdx(gRow - 1 + i, gCol - 1, gRowWidth)];
    } else if (lidCol == (lszCol - 1)) {
        for (int i = 0; i < (lszRow + 2); i++)
            sh[ToFlatIdx(lidRow - 1 + i, lidCol + 1, lRowWidth)] = data[ToFlatIdx(gRow - 1 + i, gCol + 1, gRowWidth)];
    }
    __syncthreads();
    for (int i = 0; i < lszRow; i++) {
        float c = sh[ToFlatIdx(lidRow + i, lidCol, lRowWidth)];
        float card = sh[ToFlatIdx(lidRow - 1 + i, lidCol, lRowWidth)] + sh[ToFlatIdx(lidRow + 1 + i, lidCol, lRowWidth)]
                   + sh[ToFlatIdx(lidRow + i, lidCol + 1, lRowWidth)] + sh[ToFlatIdx(lidRow + i, lidCol - 1, lRowWidth)];
        float diag = sh[ToFlatIdx(lidRow - 1 + i, lidCol + 1, lRowWidth)] + sh[ToFlatIdx(lidRow + 1 + i, lidCol + 1, lRowWidth)]
                   + sh[ToFlatIdx(lidRow - 1 + i, lidCol - 1, lRowWidth)] + sh[ToFlatIdx(lidRow + 1 + i, lidCol - 1, lRowWidth)];
        newData[ToFlatIdx(gRow + i, gCol, gRowWidth)] = wCenter * c + wCardinal * card + wDiagonal * diag;
    }
}
