// SHOC QTC QTC_device, full-storage path (what SHOC sizes 1-4 run; size 1 keeps the matrix in
// global memory, sizes 2-4 bind it to a 2D texture): block b grows, for each seed it owns
// (ungrpd_pnts_indr[b], [b + gridDim.x], ...), a candidate cluster. The distance matrix is the full
// N0 x N0 matrix (FLT_MAX off the threshold neighbourhood). indr_mtrx row p lists p's neighbours
// (ascending, -1 padded to max_degree). The seed's first 12 x 64 neighbours are fetched once into
// registers (slot k of thread t: neighbour k*64 + t); later ones are refetched every round and
// their cluster distance kept in dist_to_clust. Each round a thread reads, for each candidate
// still free, Ai_mask[c], then clustered_pnts_mask[c], then distance_matrix[c*N0 + latest] (one
// row per lane, column `latest`); the block reduction in shared memory picks the candidate whose
// addition gives the smallest diameter (ties: the smaller point id).
#define TPB 64
#define SLOTS 12
__device__ int closest_full(float d, float threshold, int p, float *dist_array, int *index_array)
{
    int tid = threadIdx.x;
    dist_array[tid] = d;
    index_array[tid] = p;
    __syncthreads();
    if (tid == 0) {
        for (int j = 1; j < TPB; j++) {
            float x = dist_array[j];
            if (x < d || (x == d && index_array[j] < index_array[0])) { d = x; index_array[0] = index_array[j]; }
        }
        if (d > threshold) index_array[0] = -1;
    }
    __syncthreads();
    return index_array[0];
}
extern "C" __global__ void qtc_full(const float *distance_matrix, char *Ai_mask, const char *clustered_pnts_mask,
                                    const int *indr_mtrx, int *cluster_cardinalities, const int *ungrpd_pnts_indr,
                                    float *dist_to_clust, const int *degrees, int point_count, int N0,
                                    int max_degree, float threshold, int total_blocks)
{
    __shared__ float dist_array[TPB];
    __shared__ int index_array[TPB];
    int tid = threadIdx.x, b = blockIdx.y * gridDim.x + blockIdx.x;
    Ai_mask += b * N0;
    dist_to_clust += b * max_degree;
    int best = -1, best_index = -1;
    for (int s = b; s < point_count; s += total_blocks) {
        int seed = ungrpd_pnts_indr[s];
        int degree = degrees[seed];
        if (degree <= best) continue;
        for (int i = tid; i < N0; i += TPB) Ai_mask[i] = 0;
        for (int i = tid; i < max_degree; i += TPB) dist_to_clust[i] = 0;
        if (tid == 0) Ai_mask[seed] = 1;
        __syncthreads();
        const int *row = indr_mtrx + seed * max_degree;
        int cand[SLOTS];
        float cdist[SLOTS];
#pragma unroll
        for (int k = 0; k < SLOTS; k++) { cand[k] = -1; cdist[k] = 0; }
#pragma unroll
        for (int k = 0; k < SLOTS; k++) {
            if (k * TPB + tid >= degree) break;
            cand[k] = row[k * TPB + tid];
        }
        __syncthreads();
        int cnt = 1, latest = seed;
        bool grow = true;
        while (cnt < point_count && grow) {
            float min_dist = 2 * threshold;
            int pick = -1;
#pragma unroll
            for (int k = 0; k < SLOTS; k++) {
                int c = cand[k];
                if (c < 0) continue;
                if (Ai_mask[c] != 0 || clustered_pnts_mask[c] != 0) { cand[k] = -1; continue; }
                float dnew = distance_matrix[c * N0 + latest];
                float diam = cdist[k];
                if (dnew > diam) { cdist[k] = dnew; diam = dnew; }
                if (diam < min_dist) { min_dist = diam; pick = c; }
            }
            for (int i = SLOTS * TPB; i + tid < degree; i += TPB) {
                int c = row[i + tid];
                if (c < 0) continue;
                if (Ai_mask[c] != 0 || clustered_pnts_mask[c] != 0) continue;
                float cur = dist_to_clust[i + tid];
                float dnew = distance_matrix[c * N0 + latest];
                float diam = cur;
                if (dnew > cur) { dist_to_clust[i + tid] = dnew; diam = dnew; }
                if (diam < min_dist) { min_dist = diam; pick = c; }
            }
            int g = closest_full(min_dist, threshold, pick, dist_array, index_array);
            if (g >= 0) {
                if (tid == 0) Ai_mask[g] = 1;
                latest = g;
                cnt++;
            } else {
                grow = false;
            }
            __syncthreads();
        }
        if (cnt > best) { best = cnt; best_index = seed; }
    }
    if (tid == 0) { cluster_cardinalities[2 * b] = best; cluster_cardinalities[2 * b + 1] = best_index; }
}
