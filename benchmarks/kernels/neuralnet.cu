// SHOC NeuralNet kernelFeedForward1: one thread per neuron of the layer (one block), z accumulated in
// zs[] in global memory; neuron t reads row t of the weights (bound2 inputs), every thread reads the
// same activation.
extern "C" __global__ void neuralnet(float *zs, int bound2, float *weights, int w_off, float *activations1)
{
    zs[threadIdx.x] = 0.0f;
    for (int i = 0; i < bound2; i++)
        zs[threadIdx.x] += weights[w_off + threadIdx.x * bound2 + i] * activations1[i];
}
