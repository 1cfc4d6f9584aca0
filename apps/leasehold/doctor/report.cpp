// leasehold doctor's report: the findings as aligned lines ("problem  ...", "ok       ...") or
// as one line of JSON.
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "doctor/doctor.hpp"

namespace leasehold::cli::doctor_detail {
namespace {

using Json = nlohmann::ordered_json;

std::string_view level_name(Level level) {
  switch (level) {
    case Level::ok:
      return "ok";
    case Level::warning:
      return "warning";
    case Level::problem:
      return "problem";
  }
  return "problem";
}

}  // namespace

void print_findings(const std::string& server, const std::vector<Finding>& findings, bool json) {
  if (json) {
    Json array = Json::array();
    for (const Finding& finding : findings)
      array.push_back({{"check", finding.check},
                       {"level", level_name(finding.level)},
                       {"message", finding.message}});
    const Json report = {{"server", server}, {"findings", array}};
    std::cout << report.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    return;
  }
  std::ostringstream out;
  for (const Finding& finding : findings) {
    std::string level(level_name(finding.level));
    level.resize(9, ' ');  // "problem  ", "ok       ": the messages line up
    out << level << finding.message << "\n";
  }
  std::cout << out.str();
}

}  // namespace leasehold::cli::doctor_detail
