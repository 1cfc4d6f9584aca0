// A move-only std::function: completion handlers (Asio handlers, coroutine continuations) are
// move-only, so std::function cannot hold them. std::move_only_function is C++23.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace leasehold::detail {

template <class Signature>
class UniqueFunction;

template <class R, class... Args>
class UniqueFunction<R(Args...)> {
 public:
  UniqueFunction() = default;

  template <class F>
  requires(!std::is_same_v<std::decay_t<F>, UniqueFunction> &&
           std::is_invocable_r_v<R, F&, Args...>) UniqueFunction(F&& f)
      : callable_(std::make_unique<Model<std::decay_t<F>>>(std::forward<F>(f))) {}

  UniqueFunction(UniqueFunction&&) noexcept = default;
  UniqueFunction& operator=(UniqueFunction&&) noexcept = default;

  explicit operator bool() const noexcept { return callable_ != nullptr; }

  R operator()(Args... args) { return callable_->call(std::forward<Args>(args)...); }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual R call(Args... args) = 0;
  };
  template <class F>
  struct Model final : Concept {
    explicit Model(F&& f) : f(std::move(f)) {}
    explicit Model(const F& f) : f(f) {}
    R call(Args... args) override { return f(std::forward<Args>(args)...); }
    F f;
  };
  std::unique_ptr<Concept> callable_;
};

}  // namespace leasehold::detail
