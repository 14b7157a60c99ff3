// The kernels of the hand-written test program (bias_relu_program.h), in the form codegen emits:
// extern "C", every parameter a pointer, shapes compiled in (64 x 256 floats, one thread each).
#define KILN_TEST_ELEMENTS (64 * 256)
#define KILN_TEST_COLUMNS 256

extern "C" __global__ void add_bias(const float* x, const float* bias, float* sum) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < KILN_TEST_ELEMENTS) sum[i] = x[i] + bias[i % KILN_TEST_COLUMNS];
}

extern "C" __global__ void relu(const float* in, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < KILN_TEST_ELEMENTS) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

extern "C" __global__ void twice(const float* in, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < KILN_TEST_ELEMENTS) out[i] = 2.0f * in[i];
}

extern "C" __global__ void add(const float* a, const float* b, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < KILN_TEST_ELEMENTS) out[i] = a[i] + b[i];
}
