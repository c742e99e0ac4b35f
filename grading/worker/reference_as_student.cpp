// Binds the reference solutions as "the student": linked into scangrade_worker_reference, whose
// grading must give full marks (the grader proves itself the way the kernel tests do).
#include "reference.h"

namespace scangrade::student {

void hillis_steele_inclusive(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t s) {
  reference::hillis_steele_inclusive(in, out, n, s);
}
void hillis_steele_inclusive(const float* in, float* out, std::size_t n, cudaStream_t s) {
  reference::hillis_steele_inclusive(in, out, n, s);
}
void blelloch_exclusive(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t s) {
  reference::blelloch_exclusive(in, out, n, s);
}
void blelloch_exclusive(const float* in, float* out, std::size_t n, cudaStream_t s) {
  reference::blelloch_exclusive(in, out, n, s);
}
void hierarchical_scan(const std::int32_t* in, std::int32_t* out, std::size_t n, ScanKind kind, cudaStream_t s) {
  reference::hierarchical_scan(in, out, n, kind, s);
}
void hierarchical_scan(const float* in, float* out, std::size_t n, ScanKind kind, cudaStream_t s) {
  reference::hierarchical_scan(in, out, n, kind, s);
}
void single_pass_inclusive(const std::int32_t* in, std::int32_t* out, std::size_t n, cudaStream_t s) {
  reference::single_pass_inclusive(in, out, n, s);
}
void single_pass_inclusive(const float* in, float* out, std::size_t n, cudaStream_t s) {
  reference::single_pass_inclusive(in, out, n, s);
}

}  // namespace scangrade::student
