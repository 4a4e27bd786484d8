// SHOC QTC QTC_device with generate_candidate_cluster (compact storage): block b grows a candidate
// cluster around each seed point it owns. The distance matrix is compact: row p holds the distances
// to p's max_degree nearest points (indr_mtrx gives their ids, sorted, -1 padded). Each round, thread
// t examines candidates t, t+64, ... of the seed's row: it skips points already taken, finds the
// candidate in the row of the latest point added (scan of indr_mtrx, one distance_matrix read on a
// hit) and keeps the cluster diameter; a block reduction in shared memory picks the next point.
#define TPB 64
__device__ int closest(float d, float threshold, int p, float *dist_array, int *index_array)
{
    int tid = threadIdx.x;
    dist_array[tid] = d;
    index_array[tid] = p;
    __syncthreads();
    if (tid == 0) {
        for (int j = 1; j < TPB; j++) {
            float x = dist_array[j];
            if (x < d) { d = x; index_array[0] = index_array[j]; }
        }
        if (d > threshold) index_array[0] = -1;
    }
    __syncthreads();
    return index_array[0];
}
extern "C" __global__ void qtc(const float *distance_matrix, char *Ai_mask, const char *clustered_pnts_mask,
                               const int *indr_mtrx, int *cluster_cardinalities, const int *ungrpd_pnts_indr,
                               float *dist_to_clust, const int *degrees, int point_count, int max_degree,
                               float threshold)
{
    __shared__ float dist_array[TPB];
    __shared__ int index_array[TPB];
    int tid = threadIdx.x, b = blockIdx.x, nb = gridDim.x;
    Ai_mask += b * point_count;
    dist_to_clust += b * max_degree;
    int best = -1, best_index = -1;
    for (int s = b; s < point_count; s += nb) {
        int seed = ungrpd_pnts_indr[s];
        int degree = degrees[seed];
        if (degree <= best) continue;
        for (int i = tid; i < point_count; i += TPB) Ai_mask[i] = 0;
        for (int i = tid; i < max_degree; i += TPB) dist_to_clust[i] = 0;
        if (tid == 0) Ai_mask[seed] = 1;
        __syncthreads();
        int cnt = 1, latest = seed;
        while (cnt < point_count) {
            float min_dist = 3 * threshold;
            int pick = -1, last = 0;
            for (int k = tid; k < max_degree; k += TPB) {
                int cand = indr_mtrx[seed * max_degree + k];
                if (cand < 0) break;
                if (cand == seed) continue;
                float cur = dist_to_clust[k];
                if (cur > threshold || Ai_mask[cand] || clustered_pnts_mask[cand]) continue;
                float dnew = threshold + 1;
                for (int j = last; j < max_degree; j++) {
                    int q = indr_mtrx[latest * max_degree + j];
                    if (q > cand || q < 0) { last = j; break; }
                    if (q == cand) { dnew = distance_matrix[latest * max_degree + j]; break; }
                }
                float diam = cur;
                if (dnew > cur) { diam = dnew; dist_to_clust[k] = dnew; }
                if (diam < min_dist) { min_dist = diam; pick = cand; }
            }
            __syncthreads();
            int g = closest(min_dist, threshold, pick, dist_array, index_array);
            if (g < 0) break;
            if (tid == 0) Ai_mask[g] = 1;
            latest = g;
            cnt++;
            __syncthreads();
        }
        if (cnt > best) { best = cnt; best_index = seed; }
    }
    if (tid == 0) { cluster_cardinalities[2 * b] = best; cluster_cardinalities[2 * b + 1] = best_index; }
}
