// Performance points (scoring.h).
#include "scoring.h"

#include <algorithm>
#include <cmath>

namespace scangrade::grader {

double perf_fraction(double ratio) {
  if (!std::isfinite(ratio)) return ratio > 0 ? 1.0 : 0.0;
  return std::clamp((ratio - kPerfZeroRatio) / (1.0 - kPerfZeroRatio), 0.0, 1.0);
}

std::optional<double> geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  double log_sum = 0;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

ScoreSheet score_cases(const std::vector<ScoredCase>& cases, const std::map<Slot, double>& perf_max, bool gpu) {
  ScoreSheet sheet;
  double points = 0, max_points = 0, perf_points = 0, perf_max_points = 0;
  for (Slot slot : kAllSlots) {
    std::size_t count = 0, passed = 0;
    double sp = 0, smax = 0;
    std::vector<double> ratios, ratio_los, ratio_his;
    bool perf_complete = true;
    nlohmann::json statuses = nlohmann::json::object();
    for (const ScoredCase& c : cases) {
      if (c.slot != slot) continue;
      ++count;
      const std::string st(name(c.status));
      statuses[st] = statuses.value(st, 0) + 1;
      smax += c.points;
      if (c.status == Status::Pass) {
        ++passed;
        sp += c.points;
      }
      if (c.perf) {
        if (c.ratio) ratios.push_back(*c.ratio);
        else perf_complete = false;
        if (c.ratio_interval) {
          ratio_los.push_back(c.ratio_interval->first);
          ratio_his.push_back(c.ratio_interval->second);
        }
      }
    }
    if (count == 0) continue;
    sheet.all_pass = sheet.all_pass && passed == count;
    const auto found = perf_max.find(slot);
    const double pmax = found != perf_max.end() ? found->second : 0.0;
    const std::optional<double> ratio = geometric_mean(ratios);
    // the geometric means of the perf cases' interval ends, when every timed case has one
    const std::optional<double> ratio_lo = ratio_los.size() == ratios.size() ? geometric_mean(ratio_los) : std::nullopt;
    const std::optional<double> ratio_hi = ratio_his.size() == ratios.size() ? geometric_mean(ratio_his) : std::nullopt;
    // only on gpu, only when every case of the slot passed and every perf case was timed
    const double pp = gpu && passed == count && perf_complete && ratio ? pmax * perf_fraction(*ratio) : 0.0;
    sheet.slots[std::string(name(slot))] = {{"cases", count},       {"passed", passed},
                                            {"points", sp},         {"max_points", smax},
                                            {"perf_points", pp},    {"perf_max_points", pmax},
                                            {"perf_ratio", ratio ? nlohmann::json(*ratio) : nlohmann::json(nullptr)},
                                            {"statuses", statuses}};
    if (ratio && ratio_lo && ratio_hi)
      sheet.slots[std::string(name(slot))]["perf_ratio_interval"] = {*ratio_lo, *ratio_hi};
    points += sp;
    max_points += smax;
    perf_points += pp;
    perf_max_points += pmax;
  }
  sheet.score = {{"points", points},
                 {"max_points", max_points},
                 {"perf_points", perf_points},
                 {"perf_max_points", perf_max_points},
                 {"total", points + perf_points},
                 {"max_total", max_points + perf_max_points}};
  return sheet;
}

}  // namespace scangrade::grader
