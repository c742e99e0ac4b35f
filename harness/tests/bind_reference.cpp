// Binds the kernel tests to the reference solutions (scangrade::reference).
#include "reference.h"
#include "scangrade/implementation.h"

namespace scangrade::testing {
Implementation implementation_under_test();
}
SCANGRADE_IMPLEMENTATION(scangrade::testing::implementation_under_test, "reference", scangrade::reference)
