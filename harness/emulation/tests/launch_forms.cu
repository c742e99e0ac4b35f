// Every kernel launch form nvcc accepts (measured with nvcc 13.0), one small launch each: compiled
// through rewrite.py for the emulator and by nvcc (see launch_forms.h). Formatting below is
// deliberate: each odd spacing, line break and comment is a form a student's editor produces.
#include <ostream>
#include <vector>

#include "launch_forms.h"

namespace launch_forms {
namespace {

// ---- kernels ------------------------------------------------------------------------------------

// out[0] = value, out[1] = gridDim.x, out[2] = blockDim.x, out[3] += 1 per thread
__device__ void write_record(int* out, int value) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    out[0] = value;
    out[1] = static_cast<int>(gridDim.x);
    out[2] = static_cast<int>(blockDim.x);
  }
  atomicAdd(&out[3], 1);
}

__global__ void record(int* out, int value) { write_record(out, value); }

// a second kernel of the same type, so that picking the wrong one shows
__global__ void record_b(int* out, int value) { write_record(out, value + 1000); }

template <class T, int N>
__global__ void record_t(T* out, int value) {
  write_record(out, value + N);
}

template <class T>
struct Plus {
  T v;
};

template <class Op, int N>
__global__ void record_op(int* out, Op op) {
  write_record(out, op.v + N);
}

template <class Op>
__global__ void record_op1(int* out, Op op) {
  write_record(out, op.v);
}

template <class T>
__global__ void record_deduced(T* out, T value) {
  write_record(out, value);
}

// dynamic shared memory: the value goes through it
__global__ void record_smem(int* out, int value) {
  extern __shared__ int stage[];
  stage[threadIdx.x] = value + static_cast<int>(threadIdx.x);
  __syncthreads();
  write_record(out, stage[blockDim.x - 1] - static_cast<int>(blockDim.x - 1));
}

namespace inner {
template <class T>
__global__ void record_ns(T* out, int value) {
  write_record(out, value);
}
}  // namespace inner

using Kernel = void (*)(int*, int);

template <int V>
struct Width {
  static const int value = V;
};

constexpr int kSmall = 1;
constexpr int kBlock = 16;
bool g_pick = true;
int g_index = 1;
const void* g_erased = reinterpret_cast<const void*>(&record_b);

struct Holder {
  Kernel kernel;
};

Kernel pick_kernel() { return g_pick ? record : record_b; }

void host_function(int*, int) {}

// ---- host code around launches that is not a launch ----------------------------------------------

template <class T>
struct Box;
template <class T>
std::ostream& operator<<(std::ostream& os, const Box<T>&);
template <class T>
struct Box {
  T v;
  friend std::ostream& operator<< <T>(std::ostream& os, const Box<T>& b);  // operator<< <T>, no launch
};
template <class T>
std::ostream& operator<<(std::ostream& os, const Box<T>& b) {
  return os << b.v;
}

#if 0
  record<<<2, 32(out;  // an unfinished edit in a group the preprocessor skips
  this is not code either
#endif

// ---- macros -------------------------------------------------------------------------------------

#define LAUNCH(kernel, n) kernel<<<((n) + 31) / 32, 32>>>(out, n)

#define LAUNCH_LINES(kernel, grid, value) \
  kernel<<<grid,                          \
           32>>>(out,                     \
                 value)

#define CHECK_LAUNCH(call) \
  do {                     \
    call;                  \
  } while (0)

#define RUN(...) __VA_ARGS__

#define LAUNCH_SUFFIX(suffix, value) record##suffix<<<2, 32>>>(out, value)

#define THE_KERNEL record
#define LAUNCH_RECORD record<<<2, 32>>>
#define THE_CONFIG 2, 32

// ---- the forms ----------------------------------------------------------------------------------

cudaError_t plain(int* out) {
  record<<<2, 32>>>(out, 101);
  return cudaGetLastError();
}

cudaError_t visual_studio_spacing(int* out) {
  record << <2, 32 >> > (out, 102);
  return cudaGetLastError();
}

cudaError_t comments_between_chevrons(int* out) {
  record <</* grid */< 3, 32 >>/* block */> (out, 103);
  return cudaGetLastError();
}

cudaError_t line_breaks(int* out) {
  record
      <<<
      2,
      64
      >>
      >
      (out,
       104);
  return cudaGetLastError();
}

cudaError_t tabs_between_chevrons(int* out) {
  record <<	< 2, 32 >>	>(out, 105);
  return cudaGetLastError();
}

cudaError_t operators_in_configuration(int* out) {
  record<<<(kSmall < 2 ? 2 : 1), 128 >> 2>>>(out, 106);  // '<' and '>>' are operators here
  return cudaGetLastError();
}

cudaError_t templates_in_configuration(int* out) {
  record<<<Width<Width<2>::value>::value, Width<64>::value >> 1 >> >(out, 107);
  return cudaGetLastError();
}

cudaError_t braces_in_configuration(int* out) {
  record<<<dim3{2, 1, 1}, {32, 1, 1}>>>(out, 108);
  return cudaGetLastError();
}

cudaError_t grid_only(int* out) {
  record<<<3>>>(out, 109);  // nvcc's block defaults to 1
  return cudaGetLastError();
}

cudaError_t template_kernel(int* out) {
  record_t<int, 4><<<2, 32>>>(out, 106);  // writes 110
  return cudaGetLastError();
}

cudaError_t template_kernel_expression(int* out) {
  record_t<int, kBlock * 2><<<2, kBlock * 2>>>(out, 79);  // writes 111
  return cudaGetLastError();
}

cudaError_t nested_template_kernel(int* out) {
  record_op<Plus<int>, 8><<<2, 32>>>(out, Plus<int>{104});  // writes 112
  return cudaGetLastError();
}

cudaError_t nested_template_kernel_closing_together(int* out) {
  record_op1<Plus<int>><<<2, 32>>>(out, Plus<int>{113});
  return cudaGetLastError();
}

cudaError_t deduced_template_kernel(int* out) {
  record_deduced<<<2, 32>>>(out, 114);
  return cudaGetLastError();
}

cudaError_t qualified_kernels(int* out) {
  inner::record_ns<int><<<2, 32>>>(out, 0);
  ::launch_forms::inner::record_ns<int><<<2, 32>>>(out, 115);
  return cudaGetLastError();
}

cudaError_t macro_body(int* out) {
  LAUNCH(record, 116);  // grid (116 + 31) / 32 = 4
  return cudaGetLastError();
}

cudaError_t macro_body_on_several_lines(int* out) {
  LAUNCH_LINES(record, 2, 117);
  return cudaGetLastError();
}

cudaError_t macro_argument_in_parentheses(int* out) {
  CHECK_LAUNCH((record<<<2, 32>>>(out, 118)));
  return cudaGetLastError();
}

cudaError_t macro_argument_without_commas(int* out) {
  CHECK_LAUNCH(record<<<3>>>(out, 119));
  return cudaGetLastError();
}

cudaError_t variadic_macro_argument(int* out) {
  RUN(record<<<2, 32>>>(out, 120));
  return cudaGetLastError();
}

cudaError_t token_pasting_in_macro(int* out) {
  LAUNCH_SUFFIX(_b, 121);  // record_b: writes 1121
  return cudaGetLastError();
}

cudaError_t macros_for_kernel_and_configuration(int* out) {
  THE_KERNEL<<<THE_CONFIG>>>(out, 0);
  record<<<THE_CONFIG>>>(out, 122);
  return cudaGetLastError();
}

cudaError_t macro_without_the_arguments(int* out) {
  LAUNCH_RECORD(out, 143);
  return cudaGetLastError();
}

cudaError_t function_pointer_auto(int* out) {
  auto kp = g_pick ? record : record_b;
  kp<<<2, 32>>>(out, 123);
  return cudaGetLastError();
}

cudaError_t function_pointer_declared(int* out) {
  void (*kp)(int*, int) = record;
  kp<<<2, 32>>>(out, 124);
  return cudaGetLastError();
}

cudaError_t function_pointer_table(int* out) {
  Kernel table[] = {record_b, record};
  table[g_index]<<<2, 32>>>(out, 125);
  return cudaGetLastError();
}

cudaError_t parenthesized_name(int* out) {
  (record)<<<2, 32>>>(out, 126);
  return cudaGetLastError();
}

cudaError_t parenthesized_expression(int* out) {
  (g_pick ? record : record_b)<<<2, 32>>>(out, 127);
  return cudaGetLastError();
}

cudaError_t dereferenced_pointer(int* out) {
  Kernel kp = record;
  (*kp)<<<2, 32>>>(out, 128);
  return cudaGetLastError();
}

cudaError_t member_pointers(int* out) {
  Holder holder{record};
  Holder* p = &holder;
  holder.kernel<<<2, 32>>>(out, 0);
  p->kernel<<<2, 32>>>(out, 129);
  return cudaGetLastError();
}

cudaError_t call_result(int* out) {
  pick_kernel()<<<2, 32>>>(out, 130);
  return cudaGetLastError();
}

cudaError_t lambda_result(int* out) {
  [] { return record; }()<<<2, 32>>>(out, 131);
  return cudaGetLastError();
}

cudaError_t cast_result(int* out) {
  reinterpret_cast<Kernel>(const_cast<void*>(g_erased))<<<2, 32>>>(out, 132);  // record_b: writes 1132
  return cudaGetLastError();
}

cudaError_t statement_contexts(int* out) {
  if (g_pick) (record)<<<2, 32>>>(out, 0);
  (void)record<<<2, 32>>>(out, 0);
  (cudaGetLastError(), record<<<2, 32>>>(out, 133));
  return cudaGetLastError();
}

cudaError_t shared_memory_and_stream(int* out) {
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  record_smem<<<2, 32, 32 * sizeof(int), stream>>>(out, 134);
  cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_from_template(T* out) {
  record_t<T, 1><<<2, 32>>>(out, 134);  // writes 135
  return cudaGetLastError();
}

cudaError_t template_host_function(int* out) { return launch_from_template(out); }

cudaError_t launch_kernel_void_pointer(int* out) {
  int value = 136;
  void* args[] = {&out, &value};
  return cudaLaunchKernel((void*)record, dim3(2), dim3(32), args, 0, nullptr);
}

cudaError_t launch_kernel_defaults(int* out) {
  int value = 137;
  void* args[] = {&out, &value};
  return cudaLaunchKernel((const void*)record, 3, 32, args);
}

cudaError_t launch_kernel_typed(int* out) {
  int value = 138;
  void* args[] = {&out, &value};
  return cudaLaunchKernel(record, dim3(2), dim3(32), args, 0, 0);
}

cudaError_t launch_kernel_template_void_pointer(int* out) {
  int value = 132;
  void* args[] = {&out, &value};
  return cudaLaunchKernel((void*)record_t<int, 7>, 2, 32, args);  // only launched here: writes 139
}

cudaError_t launch_kernel_erased_variable(int* out) {
  int value = 140;
  void* args[] = {&out, &value};
  return cudaLaunchKernel(g_erased, dim3(2), dim3(32), args, 0, nullptr);  // record_b: writes 1140
}

cudaError_t launch_kernel_ex(int* out) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(2);
  config.blockDim = dim3(32);
  config.dynamicSmemBytes = 32 * sizeof(int);
  short value = 141;  // converted to int as in a call
  return cudaLaunchKernelEx(&config, record_smem, out, value);
}

cudaError_t launch_kernel_ex_c(int* out) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(3);
  config.blockDim = dim3(32);
  int value = 142;
  void* args[] = {&out, &value};
  return cudaLaunchKernelExC(&config, (const void*)record, args);
}

}  // namespace

int shifts(int x) {
  std::vector<std::vector<std::vector<int>>> nested;  // '>>>' closing templates
  const char* text = "record<<<1, 1>>>(out, 0)";    // record<<<1, 1>>>(out, 0) in a comment
  char lt = '<';
  return (x << 2) + (x >> 1) + static_cast<int>(nested.size()) + (text[6] == lt ? 1 : 0);
}

const Form kForms[] = {
    {"plain", plain, 101, 2, 32},
    {"visual_studio_spacing", visual_studio_spacing, 102, 2, 32},
    {"comments_between_chevrons", comments_between_chevrons, 103, 3, 32},
    {"line_breaks", line_breaks, 104, 2, 64},
    {"tabs_between_chevrons", tabs_between_chevrons, 105, 2, 32},
    {"operators_in_configuration", operators_in_configuration, 106, 2, 32},
    {"templates_in_configuration", templates_in_configuration, 107, 2, 32},
    {"braces_in_configuration", braces_in_configuration, 108, 2, 32},
    {"grid_only", grid_only, 109, 3, 1},
    {"template_kernel", template_kernel, 110, 2, 32},
    {"template_kernel_expression", template_kernel_expression, 111, 2, 32},
    {"nested_template_kernel", nested_template_kernel, 112, 2, 32},
    {"nested_template_kernel_closing_together", nested_template_kernel_closing_together, 113, 2, 32},
    {"deduced_template_kernel", deduced_template_kernel, 114, 2, 32},
    {"qualified_kernels", qualified_kernels, 115, 2, 32, 2},
    {"macro_body", macro_body, 116, 4, 32},
    {"macro_body_on_several_lines", macro_body_on_several_lines, 117, 2, 32},
    {"macro_argument_in_parentheses", macro_argument_in_parentheses, 118, 2, 32},
    {"macro_argument_without_commas", macro_argument_without_commas, 119, 3, 1},
    {"variadic_macro_argument", variadic_macro_argument, 120, 2, 32},
    {"token_pasting_in_macro", token_pasting_in_macro, 1121, 2, 32},
    {"macros_for_kernel_and_configuration", macros_for_kernel_and_configuration, 122, 2, 32, 2},
    {"macro_without_the_arguments", macro_without_the_arguments, 143, 2, 32},
    {"function_pointer_auto", function_pointer_auto, 123, 2, 32},
    {"function_pointer_declared", function_pointer_declared, 124, 2, 32},
    {"function_pointer_table", function_pointer_table, 125, 2, 32},
    {"parenthesized_name", parenthesized_name, 126, 2, 32},
    {"parenthesized_expression", parenthesized_expression, 127, 2, 32},
    {"dereferenced_pointer", dereferenced_pointer, 128, 2, 32},
    {"member_pointers", member_pointers, 129, 2, 32, 2},
    {"call_result", call_result, 130, 2, 32},
    {"lambda_result", lambda_result, 131, 2, 32},
    {"cast_result", cast_result, 1132, 2, 32},
    {"statement_contexts", statement_contexts, 133, 2, 32, 3},
    {"shared_memory_and_stream", shared_memory_and_stream, 134, 2, 32},
    {"template_host_function", template_host_function, 135, 2, 32},
    {"launch_kernel_void_pointer", launch_kernel_void_pointer, 136, 2, 32},
    {"launch_kernel_defaults", launch_kernel_defaults, 137, 3, 32},
    {"launch_kernel_typed", launch_kernel_typed, 138, 2, 32},
    {"launch_kernel_template_void_pointer", launch_kernel_template_void_pointer, 139, 2, 32},
    {"launch_kernel_erased_variable", launch_kernel_erased_variable, 1140, 2, 32},
    {"launch_kernel_ex", launch_kernel_ex, 141, 2, 32},
    {"launch_kernel_ex_c", launch_kernel_ex_c, 142, 3, 32},
};
const int kFormCount = sizeof(kForms) / sizeof(kForms[0]);

cudaError_t zero_grid_in_macro(int* out, int* line) {
  *line = __LINE__; LAUNCH_LINES(record, 0, 1);
  return cudaGetLastError();
}

cudaError_t zero_grid_through_launch_kernel(int* out, int* line) {
  int value = 1;
  void* args[] = {&out, &value};
  *line = __LINE__; return cudaLaunchKernel((void*)record, 0, 32, args);
}

cudaError_t zero_grid_through_launch_kernel_ex(int* out, int* line) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(0);
  config.blockDim = dim3(32);
  *line = __LINE__; return cudaLaunchKernelEx(&config, record, out, 1);
}

cudaError_t launch_kernel_of_a_host_function(int* out, int* line) {
  int value = 1;
  void* args[] = {&out, &value};
  *line = __LINE__; return cudaLaunchKernel((const void*)host_function, 1, 1, args);
}

}  // namespace launch_forms
