// toolchain.json is enough to build a worker without CMake: compile the repository's student/*.cu
// with cuda_flags, link with `link`, and the result speaks the protocol (its hello line on fd 3).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "protocol.h"

namespace scangrade::grader {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

json toolchain() {
  const auto text = read_file(SCANGRADE_TOOLCHAIN_JSON);
  if (!text) return nullptr;
  return json::parse(*text);
}

TEST(Toolchain, NamesEveryPieceThatExists) {
  const json t = toolchain();
  ASSERT_TRUE(t.is_object()) << "cannot read " << SCANGRADE_TOOLCHAIN_JSON;
  for (const char* key : {"nvcc", "cxx", "cuda_flags", "link", "judge", "reference_worker", "version"})
    EXPECT_TRUE(t.contains(key)) << key;
  EXPECT_TRUE(fs::exists(t["nvcc"].get<std::string>()));
  EXPECT_TRUE(fs::exists(t["judge"].get<std::string>()));
  EXPECT_TRUE(fs::exists(t["reference_worker"].get<std::string>()));
  for (const json& piece : t["link"]) {
    const std::string p = piece;
    if (!p.empty() && p[0] == '/') {
      EXPECT_TRUE(fs::exists(p)) << p;
    }
  }
  const std::string flags = t["cuda_flags"].dump();
  for (const char* f : {"-std=c++17", "-O3", "-lineinfo", "-gencode", "harness/include"})
    EXPECT_NE(flags.find(f), std::string::npos) << f;
}

TEST(Toolchain, HandBuiltStudentWorkerSaysHello) {
  const json t = toolchain();
  ASSERT_TRUE(t.is_object());
  char pattern[] = "/tmp/scangrade-toolchain-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  std::string flags;
  for (const json& f : t["cuda_flags"]) flags += " " + quote(f.get<std::string>());
  const std::string student = std::string(SCANGRADE_SOURCE_DIR) + "/student";
  // compile every slot file in parallel, then link
  std::string script = "set -e\n";
  std::string objects;
  for (const auto& entry : fs::directory_iterator(student)) {
    if (entry.path().extension() != ".cu") continue;
    const std::string obj = dir + "/" + entry.path().stem().string() + ".o";
    script += quote(t["nvcc"]) + flags + " -I" + quote(student) + " -c " + quote(entry.path().string()) + " -o " +
              quote(obj) + " &\n";
    objects += " " + quote(obj);
  }
  script += "wait\n";
  std::string link;
  for (const json& piece : t["link"]) link += " " + quote(piece.get<std::string>());
  const std::string worker = dir + "/worker";
  script += "for o in" + objects + "; do test -f \"$o\"; done\n";
  script += quote(t["cxx"]) + " -o " + quote(worker) + objects + link + "\n";
  std::ofstream(dir + "/build.sh") << script;
  const int rc = std::system(("sh " + quote(dir + "/build.sh") + " > " + quote(dir + "/build.log") + " 2>&1").c_str());
  ASSERT_EQ(rc, 0) << "building a worker from toolchain.json failed:\n" << read_file(dir + "/build.log").value_or("");

  // the hello line on fd 3 (with the reason in "error" on a machine without a GPU)
  const std::string cmd = quote(worker) + " --channel " + quote(dir) + " 3>&1 >/dev/null 2>&1 </dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[4096] = {};
  ASSERT_NE(fgets(line, sizeof line, p), nullptr);
  pclose(p);
  const json hello = json::parse(line);
  EXPECT_EQ(hello["hello"], 1);
  EXPECT_TRUE(hello["error"].is_string());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace scangrade::grader
