// See step_record.h.
#include "runtime/train/step_record.h"

#include <cstring>

namespace detrain::runtime {

bool StepSchedule::TakesRoots(int64_t t) const { return t + 1 == steps || Checkpoints(t); }
bool StepSchedule::Checkpoints(int64_t t) const {
  return checkpoint_every > 0 && (t + 1) % checkpoint_every == 0 && t + 1 < steps;
}
bool StepSchedule::Evaluates(int64_t t) const {
  return t + 1 == steps || (eval_every > 0 && (t + 1) % eval_every == 0);
}

attest::Digest256 ChainHash(const StepRecord& r, const attest::Digest256& previous) {
  attest::StepHashInput in;
  in.previous = previous;
  in.step = static_cast<uint64_t>(r.step);
  in.batch = r.batch;
  in.key_hi = r.key_hi;
  in.key_lo = r.key_lo;
  in.learning_rate_bits = r.learning_rate_bits;
  in.loss_bits = r.loss_bits;
  in.state_digest = r.state;
  if (r.params_root.has_value()) in.roots = {*r.params_root, *r.optimizer_root};
  if (r.eval_loss_bits.has_value()) {
    in.eval_bits.push_back(*r.eval_loss_bits);
    if (r.eval_accuracy_bits.has_value()) in.eval_bits.push_back(*r.eval_accuracy_bits);
  }
  return attest::StepHash(in);
}

float FloatOfBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t BitsOfFloat(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

}  // namespace detrain::runtime
