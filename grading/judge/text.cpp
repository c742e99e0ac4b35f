// Small helpers of the judge (text.h).
#include "text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "files.h"

namespace scangrade::grader {

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::string tail_lines(const std::string& text, std::size_t lines) {
  std::string t = trim(text);
  std::size_t at = t.size();
  for (std::size_t i = 0; i < lines && at > 0; ++i) {
    const std::size_t nl = t.rfind('\n', at - 1);
    if (nl == std::string::npos) {
      at = 0;
      break;
    }
    at = nl;
  }
  std::string tail = t.substr(at == 0 ? 0 : at + 1);
  if (tail.size() > 2000) tail = "..." + tail.substr(tail.size() - 2000);
  return tail;
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.2f" : "%.0f", s);
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string random_hex(std::size_t bytes) {
  std::string hex;
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  std::random_device fallback;
  for (std::size_t i = 0; i < bytes; ++i) {
    unsigned char b = 0;
    if (!urandom.read(reinterpret_cast<char*>(&b), 1)) b = static_cast<unsigned char>(fallback());
    static const char* digits = "0123456789abcdef";
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string read_from(const std::string& path, std::uintmax_t from) {
  return read_file_capped(path, from, 4096, 16384).text;  // the student may have written a flood
}

}  // namespace scangrade::grader
