// SHOC S3D gr_base (the getrates base kernel, double precision): one grid point per thread, 22 species
// stored structure-of-arrays (species k of point i at k * stride + i); reads pressure P, temperature T and
// the mass fractions Y, writes the molar concentrations C. The inverse molecular weights are immediates.
extern "C" __global__ void s3d(const double *__restrict__ P, const double *__restrict__ T,
                               const double *__restrict__ Y, double *__restrict__ C,
                               const double TCONV, const double PCONV, const int stride)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const double temp = T[i] * TCONV;
    const double pres = P[i] * PCONV;
    double sum = 0.0;
    sum += Y[0 * stride + i] * 8.718061382127e-02;
    sum += Y[1 * stride + i] * 4.008644240440e-02;
    sum += Y[2 * stride + i] * 5.787696861274e-02;
    sum += Y[3 * stride + i] * 3.626804698018e-02;
    sum += Y[4 * stride + i] * 3.504874755053e-02;
    sum += Y[5 * stride + i] * 2.575149294280e-01;
    sum += Y[6 * stride + i] * 6.331558386466e-01;
    sum += Y[7 * stride + i] * 2.642102860235e-02;
    sum += Y[8 * stride + i] * 8.056991938174e-02;
    sum += Y[9 * stride + i] * 8.841295214384e-02;
    sum += Y[10 * stride + i] * 2.231725902995e-02;
    sum += Y[11 * stride + i] * 4.610081603054e-02;
    sum += Y[12 * stride + i] * 2.645201736310e-02;
    sum += Y[13 * stride + i] * 4.553829451801e-02;
    sum += Y[14 * stride + i] * 3.434183866204e-02;
    sum += Y[15 * stride + i] * 1.311110878025e-01;
    sum += Y[16 * stride + i] * 3.456157092017e-02;
    sum += Y[17 * stride + i] * 2.551411581214e-02;
    sum += Y[18 * stride + i] * 4.163202535224e-02;
    sum += Y[19 * stride + i] * 2.974855332785e-02;
    sum += Y[20 * stride + i] * 3.274169097737e-02;
    sum += Y[21 * stride + i] * 2.619597734572e-01;
    sum = pres / (sum * temp * 8.314510e7);
    C[0 * stride + i] = Y[0 * stride + i] * 8.718061382127e-02 * sum;
    C[1 * stride + i] = Y[1 * stride + i] * 4.008644240440e-02 * sum;
    C[2 * stride + i] = Y[2 * stride + i] * 5.787696861274e-02 * sum;
    C[3 * stride + i] = Y[3 * stride + i] * 3.626804698018e-02 * sum;
    C[4 * stride + i] = Y[4 * stride + i] * 3.504874755053e-02 * sum;
    C[5 * stride + i] = Y[5 * stride + i] * 2.575149294280e-01 * sum;
    C[6 * stride + i] = Y[6 * stride + i] * 6.331558386466e-01 * sum;
    C[7 * stride + i] = Y[7 * stride + i] * 2.642102860235e-02 * sum;
    C[8 * stride + i] = Y[8 * stride + i] * 8.056991938174e-02 * sum;
    C[9 * stride + i] = Y[9 * stride + i] * 8.841295214384e-02 * sum;
    C[10 * stride + i] = Y[10 * stride + i] * 2.231725902995e-02 * sum;
    C[11 * stride + i] = Y[11 * stride + i] * 4.610081603054e-02 * sum;
    C[12 * stride + i] = Y[12 * stride + i] * 2.645201736310e-02 * sum;
    C[13 * stride + i] = Y[13 * stride + i] * 4.553829451801e-02 * sum;
    C[14 * stride + i] = Y[14 * stride + i] * 3.434183866204e-02 * sum;
    C[15 * stride + i] = Y[15 * stride + i] * 1.311110878025e-01 * sum;
    C[16 * stride + i] = Y[16 * stride + i] * 3.456157092017e-02 * sum;
    C[17 * stride + i] = Y[17 * stride + i] * 2.551411581214e-02 * sum;
    C[18 * stride + i] = Y[18 * stride + i] * 4.163202535224e-02 * sum;
    C[19 * stride + i] = Y[19 * stride + i] * 2.974855332785e-02 * sum;
    C[20 * stride + i] = Y[20 * stride + i] * 3.274169097737e-02 * sum;
    C[21 * stride + i] = Y[21 * stride + i] * 2.619597734572e-01 * sum;
}
