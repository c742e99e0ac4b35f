// Slot 3 that calls the reference solution by name: it declares scangrade::reference::hierarchical_scan
// exactly as reference/reference.h does and forwards to it (no kernel of its own).
#include "scangrade/student_api.h"

// BUG: the reference solution belongs to the harness; student code may not call it.
namespace scangrade::reference {
void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind, cudaStream_t stream);
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream);
}  // namespace scangrade::reference

namespace scangrade::student {

void hierarchical_scan(const std::int32_t* d_in, std::int32_t* d_out, std::size_t n, ScanKind kind,
                       cudaStream_t stream) {
  scangrade::reference::hierarchical_scan(d_in, d_out, n, kind, stream);
}
void hierarchical_scan(const float* d_in, float* d_out, std::size_t n, ScanKind kind, cudaStream_t stream) {
  scangrade::reference::hierarchical_scan(d_in, d_out, n, kind, stream);
}

}  // namespace scangrade::student
