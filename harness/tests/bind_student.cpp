// Binds the kernel tests to the student's slots (scangrade::student).
#include "scangrade/implementation.h"

namespace scangrade::testing {
Implementation implementation_under_test();
}
SCANGRADE_IMPLEMENTATION(scangrade::testing::implementation_under_test, "student", scangrade::student)
