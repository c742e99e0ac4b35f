// A tolerant reader of compute-sanitizer's XML (sanitizer_xml.h).
#include "sanitizer_xml.h"

#include "text.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

namespace scangrade::grader {
namespace {

/// &lt; &gt; &amp; &quot; &apos; &#NN; &#xNN; (ASCII range; others are kept as written).
std::string decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    const std::size_t semi = s.find(';', i);
    if (semi == std::string::npos || semi - i > 10) {
      out += s[i];
      continue;
    }
    const std::string ent = s.substr(i + 1, semi - i - 1);
    std::optional<char> ch;
    if (ent == "lt") ch = '<';
    else if (ent == "gt") ch = '>';
    else if (ent == "amp") ch = '&';
    else if (ent == "quot") ch = '"';
    else if (ent == "apos") ch = '\'';
    else if (ent.size() > 1 && ent[0] == '#') {
      const long v = ent[1] == 'x' || ent[1] == 'X' ? std::strtol(ent.c_str() + 2, nullptr, 16)
                                                    : std::strtol(ent.c_str() + 1, nullptr, 10);
      if (v > 0 && v < 128) ch = static_cast<char>(v);
    }
    if (ch) {
      out += *ch;
      i = semi;
    } else {
      out += s[i];
    }
  }
  return out;
}

/// Start of the opening tag <name> or <name attr...> at or after `from` (not <namefoo>).
std::size_t find_open(const std::string& xml, const std::string& name, std::size_t from) {
  const std::string open = "<" + name;
  for (std::size_t at = xml.find(open, from); at != std::string::npos; at = xml.find(open, at + 1)) {
    const char next = at + open.size() < xml.size() ? xml[at + open.size()] : '\0';
    if (next == '>' || next == '/' || std::isspace(static_cast<unsigned char>(next))) return at;
  }
  return std::string::npos;
}

/// The inner text of the first <name>...</name> in xml[from, to); nullopt when absent.
/// Self-closing <name/> gives "".
std::optional<std::string> element(const std::string& xml, const std::string& name, std::size_t from = 0,
                                   std::size_t to = std::string::npos) {
  const std::size_t at = find_open(xml, name, from);
  if (at == std::string::npos || (to != std::string::npos && at >= to)) return std::nullopt;
  const std::size_t gt = xml.find('>', at);
  if (gt == std::string::npos) return std::nullopt;
  if (xml[gt - 1] == '/') return std::string();
  const std::size_t close = xml.find("</" + name + ">", gt);
  if (close == std::string::npos || (to != std::string::npos && close > to)) return std::nullopt;
  return xml.substr(gt + 1, close - gt - 1);
}

std::string text_of(const std::string& xml, const std::string& name) {
  const auto e = element(xml, name);
  return e ? trim(decode(*e)) : "";
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// A source path as the student knows it: "student/x.cu" from the grader's copy of the submission
/// (an absolute folder of the grading machine), or the file name alone when it is not the student's.
std::string shown_path(const std::string& path) {
  const auto at = path.rfind("/student/");
  if (at != std::string::npos) return path.substr(at + 1);
  if (path.rfind("student/", 0) == 0) return path;
  return path.substr(path.find_last_of('/') + 1);
}

}  // namespace

SanitizerReport parse_sanitizer_xml(const std::string& xml, const std::string& tool) {
  SanitizerReport report;
  const std::size_t root = find_open(xml, "ComputeSanitizerOutput", 0);
  if (root == std::string::npos) {
    report.problem = xml.empty() ? "the XML report is empty" : "the XML report has no <ComputeSanitizerOutput> element";
    return report;
  }
  report.readable = true;
  for (std::size_t at = find_open(xml, "record", root); at != std::string::npos; at = find_open(xml, "record", at + 1)) {
    const std::size_t end = xml.find("</record>", at);
    const std::string record = xml.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const std::string level = lower(text_of(record, "level"));
    if (level == "info" || level == "note") continue;
    ++report.records;
    if (report.findings.size() >= kMaxFindings) continue;
    SanitizerFinding f;
    f.tool = tool;
    f.kind = lower(text_of(record, "kind"));
    if (f.kind.empty()) f.kind = "error";
    const auto where = element(record, "where");
    const std::string& place = where ? *where : record;
    f.kernel = text_of(place, "func");
    f.file = text_of(place, "path");
    if (f.file.empty()) f.file = text_of(place, "file");
    f.file = shown_path(f.file);
    const std::string line = text_of(place, "line");
    if (!line.empty() && std::all_of(line.begin(), line.end(), [](unsigned char c) { return std::isdigit(c); }))
      f.line = std::atoi(line.c_str());
    if (const auto what = element(record, "what")) {
      f.text = text_of(*what, "text");
      // racecheck: <source> and <destination> accesses, each with a direction and a <where>
      const auto access = [&](const char* side) -> std::string {
        const auto part = element(*what, side);
        if (!part) return "";
        std::string a = text_of(*part, "direction");
        a += a.empty() ? "access" : " access";
        const std::string path = text_of(*part, "path"), line = text_of(*part, "line");
        if (!path.empty()) a += " at " + shown_path(path) + (line.empty() ? "" : ":" + line);
        return a;
      };
      const std::string source = access("source"), destination = access("destination");
      if (!source.empty() && !destination.empty()) f.text += " between " + source + " and " + destination;
      const std::string count = text_of(*what, "count");
      if (!count.empty()) f.text += " (" + count + " hazards)";
    }
    if (f.text.empty()) f.text = text_of(record, "text");
    if (f.text.empty()) f.text = "compute-sanitizer " + tool + " record of kind '" + f.kind + "'";
    report.findings.push_back(std::move(f));
    if (end == std::string::npos) break;
  }
  return report;
}

std::string describe_findings(const std::vector<SanitizerFinding>& findings, std::size_t records) {
  if (findings.empty()) return "";
  const SanitizerFinding& f = findings.front();
  std::string s = f.tool + ": " + f.text;
  if (!f.kernel.empty()) s += " in kernel " + f.kernel;
  if (!f.file.empty()) s += " at " + f.file + (f.line > 0 ? ":" + std::to_string(f.line) : "");
  else if (f.kernel.empty()) s += " (no kernel/file in the report: build with -lineinfo)";
  if (records > 1) s += " (and " + std::to_string(records - 1) + " more)";
  return s;
}

}  // namespace scangrade::grader
