// scangrade_judge: grades one submission (judge.h; `scangrade_judge --help` for the usage).
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "judge.h"
#include "protocol.h"

int main(int argc, char** argv) {
  using namespace scangrade::grader;
  reuse_large_buffers();
  const std::vector<std::string> args(argv + 1, argv + argc);
  Options options;
  try {
    options = parse_args(args);
  } catch (const UsageError& e) {
    std::cerr << "scangrade_judge: " << e.what() << "\nrun with --help for the usage\n";
    return kBadInput;
  }
  if (options.help) {
    std::cout << usage_text();
    return 0;
  }
  try {
    return run_judge(options);
  } catch (const std::exception& e) {
    std::cerr << "scangrade_judge: internal error: " << e.what() << " (harness fault: please report)\n";
    return kInternalError;
  }
}
