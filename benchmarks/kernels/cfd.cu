// Rodinia CFD (euler3d) cuda_compute_flux: one element per thread (block 192); variables, normals and
// the neighbour list are structure-of-arrays with stride nelr; neighbour -1 is a wall, -2 the far field
// (ff_variable in constant memory). Writes the five fluxes of its element.
#define NNB 4
#define NVAR 5
__constant__ float ff_variable[NVAR];
__device__ inline float pressure(float d, float e, float m2) { return 0.4f * (e - 0.5f * m2 / d); }
extern "C" __global__ void cfd(int nelr, const int *elements_surrounding_elements, const float *normals,
                               const float *variables, float *fluxes)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float d = variables[i + 0 * nelr];
    float mx = variables[i + 1 * nelr], my = variables[i + 2 * nelr], mz = variables[i + 3 * nelr];
    float e = variables[i + 4 * nelr];
    float p = pressure(d, e, mx * mx + my * my + mz * mz);
    float f0 = 0, f1 = 0, f2 = 0, f3 = 0, f4 = 0;
    for (int j = 0; j < NNB; j++) {
        int nb = elements_surrounding_elements[i + j * nelr];
        float nx = normals[i + (j + 0 * NNB) * nelr];
        float ny = normals[i + (j + 1 * NNB) * nelr];
        float nz = normals[i + (j + 2 * NNB) * nelr];
        if (nb >= 0) {
            float dn = variables[nb + 0 * nelr];
            float mxn = variables[nb + 1 * nelr], myn = variables[nb + 2 * nelr], mzn = variables[nb + 3 * nelr];
            float en = variables[nb + 4 * nelr];
            float pn = pressure(dn, en, mxn * mxn + myn * myn + mzn * mzn);
            float fac = 0.5f * (nx + ny + nz);
            f0 += fac * (d - dn); f1 += fac * (mx + mxn) + nx * (p + pn); f2 += fac * (my + myn) + ny * (p + pn);
            f3 += fac * (mz + mzn) + nz * (p + pn); f4 += fac * (e + en) * (p + pn);
        } else if (nb == -1) {
            f1 += nx * p; f2 += ny * p; f3 += nz * p;
        } else if (nb == -2) {
            float fac = 0.5f * (nx + ny + nz);
            f0 += fac * (d - ff_variable[0]); f1 += fac * (mx + ff_variable[1]); f2 += fac * (my + ff_variable[2]);
            f3 += fac * (mz + ff_variable[3]); f4 += fac * (e + ff_variable[4]);
        }
    }
    fluxes[i + 0 * nelr] = f0; fluxes[i + 1 * nelr] = f1; fluxes[i + 2 * nelr] = f2;
    fluxes[i + 3 * nelr] = f3; fluxes[i + 4 * nelr] = f4;
}
