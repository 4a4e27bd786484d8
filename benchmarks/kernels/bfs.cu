// SHOC BFS BFS_kernel_warp (Hong et al. PPoPP'11 warp-centric): each warp (W_SZ 32) owns CHUNK_SZ
// consecutive vertices; for a vertex on the current level its lanes stride through its edge list.
#include <climits>
extern "C" __global__ void bfs(unsigned int *levels, unsigned int *edgeArray, unsigned int *edgeArrayAux,
                               int W_SZ, int CHUNK_SZ, unsigned int numVertices, int curr, int *flag)
{
    int tid = threadIdx.x + blockDim.x * blockIdx.x;
    int off = tid % W_SZ;
    int wid = tid / W_SZ;
    int v1 = wid * CHUNK_SZ;
    int chunk = CHUNK_SZ + 1;
    if (v1 + CHUNK_SZ >= numVertices) {
        chunk = numVertices - v1 + 1;
        if (chunk < 0) chunk = 0;
    }
    for (int v = v1; v < chunk - 1 + v1; v++) {
        if (levels[v] == curr) {
            unsigned int n = edgeArray[v + 1] - edgeArray[v];
            unsigned int first = edgeArray[v];
            for (int i = off; i < n; i += W_SZ) {
                int u = edgeArrayAux[i + first];
                if (levels[u] == UINT_MAX) {
                    levels[u] = curr + 1;
                    *flag = 1;
                }
            }
        }
    }
}
