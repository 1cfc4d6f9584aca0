// leasehold doctor's report: the findings as aligned lines ("problem  ...", "ok       ...") or
// as one line of JSON.
#include <iostream>
#include <sstream>
#include <string_view>

#include "displayable.hpp"
#include "doctor/doctor.hpp"
#include "inspect.hpp"

namespace leasehold::cli::doctor_detail {
namespace {

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
    std::cout << json_text(report) << "\n";
    return;
  }
  std::ostringstream out;
  for (const Finding& finding : findings) {
    std::string level(level_name(finding.level));
    level.resize(9, ' ');  // "problem  ", "ok       ": the messages line up
    // A message quotes the server (its errors, its settings): any bytes.
    out << level << displayable(finding.message) << "\n";
  }
  std::cout << out.str();
}

}  // namespace leasehold::cli::doctor_detail
