#include "cluster_forms.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace leasehold::detail {
namespace {

// What a cluster sends for one request.
enum class SentAs : std::uint8_t { itself, form, parts };

SentAs sent_as(const Request& request) {
  if (request.cluster_form().sent_in_parts_on_cluster())  // reads the keys' slots
    return SentAs::parts;
  return request.has_cluster_form() ? SentAs::form : SentAs::itself;
}

// The cluster form of `request`, with its flags.
Request form_of(const Request& request) {
  return Request(request.cluster_form())
      .retry_safe(request.is_retry_safe())
      .grants_lease(request.is_lease_grant());
}

class ClusterFormsOperation final : public Operation {
 public:
  // `sent_as[i]`: what goes for the whole's i-th request.
  ClusterFormsOperation(std::unique_ptr<Operation> whole, const std::vector<SentAs>& sent_as)
      : whole_(std::move(whole)) {
    sent = whole_->sent;
    deadline = whole_->deadline;
    id = whole_->id;  // cancelled by the whole's id
    const std::span<const Request> requests = whole_->requests();
    replies_.resize(requests.size());
    unanswered_.resize(requests.size(), 1);
    for (std::size_t index = 0; index < requests.size(); ++index) {
      const Request& request = requests[index];
      if (sent_as[index] != SentAs::parts) {
        sent_.push_back(sent_as[index] == SentAs::form ? form_of(request) : request);
        origins_.push_back({index, kWhole});
        continue;
      }
      const std::span<const Request> parts = request.cluster_form().parts();
      replies_[index].type = Reply::Type::array;
      replies_[index].elements.resize(parts.size());
      unanswered_[index] = parts.size();
      for (std::size_t part = 0; part < parts.size(); ++part) {
        sent_.push_back(parts[part]);
        origins_.push_back({index, part});
      }
    }
    set_requests(sent_);
  }

  void on_reply(std::size_t index, Reply&& reply) override {
    const Origin origin = origins_[index];
    if (origin.part == kWhole) {
      whole_->on_reply(origin.request, std::move(reply));
      return;
    }
    replies_[origin.request].elements[origin.part] = std::move(reply);
    if (--unanswered_[origin.request] == 0)
      whole_->on_reply(origin.request, std::move(replies_[origin.request]));
  }

  void complete(Transport& core, std::error_code error, std::string detail) override {
    whole_->handed_out = handed_out;
    whole_->complete(core, error, std::move(detail));
  }

 private:
  static constexpr std::size_t kWhole = static_cast<std::size_t>(-1);
  struct Origin {
    std::size_t request;  // in the whole's requests
    std::size_t part;     // kWhole: the request itself
  };

  std::unique_ptr<Operation> whole_;
  std::vector<Request> sent_;
  std::vector<Origin> origins_;  // of each of sent_
  std::vector<Reply> replies_;   // per request of the whole sent in parts: its parts' replies
  std::vector<std::size_t> unanswered_;
};

}  // namespace

std::unique_ptr<Operation> sent_in_cluster_forms(std::unique_ptr<Operation> operation) {
  const std::span<const Request> requests = operation->requests();
  // Most calls have neither: that much is two pointer tests, and they go as they are.
  if (std::all_of(requests.begin(), requests.end(), [](const Request& request) {
        return request.parts().empty() && !request.has_cluster_form();
      }))
    return operation;
  // Whether each goes in parts reads its keys' slots: once, here.
  std::vector<SentAs> sent;
  for (const Request& request : requests)
    sent.push_back(sent_as(request));
  if (std::all_of(sent.begin(), sent.end(), [](SentAs as) { return as == SentAs::itself; }))
    return operation;  // keys of one slot: the requests themselves
  return std::make_unique<ClusterFormsOperation>(std::move(operation), sent);
}

}  // namespace leasehold::detail
