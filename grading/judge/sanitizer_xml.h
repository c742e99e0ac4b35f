// Reading compute-sanitizer's XML report (`--xml --save FILE`).
//
// The format has no published schema; what the parser relies on:
//   <ComputeSanitizerOutput> ... <record> <kind>..</kind> <level>..</level>
//       <what> <text>..</text> ... </what>  <where> <func>..</func> <path>..</path> <line>..</line> </where>
//       <hostStack>..</hostStack> </record> ... </ComputeSanitizerOutput>
// It is a tolerant tag scanner (no XML library): unknown tags are ignored, a record without <where>
// takes the first func/path/line found anywhere in it, entities (&lt; &amp; &#NN; ...) are decoded.
#pragma once

#include <string>
#include <vector>

namespace scangrade::grader {

/// One error or hazard reported by compute-sanitizer.
struct SanitizerFinding {
  std::string tool;    // racecheck, memcheck, synccheck
  std::string kind;    // the record's <kind> (e.g. "Race", "Precise", "Api"), lower-cased; "error" if absent
  std::string kernel;  // the device function (<where><func>)
  std::string file;    // source file (<where><path>), when the code was built with -lineinfo
  int line = 0;        // 0 when unknown
  std::string text;    // <what><text>, or the kind
};

struct SanitizerReport {
  bool readable = false;   // the document is a ComputeSanitizerOutput
  std::string problem;     // why it is not readable
  std::size_t records = 0; // records counted (findings keeps at most kMaxFindings)
  std::vector<SanitizerFinding> findings;
};

inline constexpr std::size_t kMaxFindings = 20;

/// Parses a report of `tool`. Records of level Info/Note are not findings.
SanitizerReport parse_sanitizer_xml(const std::string& xml, const std::string& tool);

/// "racecheck: Race reported between Write access at ... in kernel scan_kernel at hs.cu:17 (and 41 more)".
std::string describe_findings(const std::vector<SanitizerFinding>& findings, std::size_t records);

}  // namespace scangrade::grader
