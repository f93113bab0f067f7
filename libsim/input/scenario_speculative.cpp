// engine.speculative: a draft model proposing tokens for the target to verify (docs/model.md,
// "Speculative decoding"). Parsed once the pool's model, tensor parallelism and sharing are known.
#include <string>
#include <vector>

#include "input/scenario_internal.hpp"

namespace fleetsim::detail {

// Expected tokens a sequence gains per verify step when draft token i is accepted with probability
// a[i] given the ones before it were: the target's own token, plus each accepted prefix,
// 1 + a1 + a1 a2 + ... (with one rate a: (1 - a^(k+1)) / (1 - a)).
double spec_tokens_per_step(const std::vector<double>& a) {
  double mu = 1.0, run = 1.0;
  for (double x : a) {
    run *= x;
    mu += run;
  }
  return mu;
}

void parse_speculative(const N& eng, const std::vector<ModelSpec>& models, PoolSpec& P) {
  if (!eng.has("speculative")) return;
  const N sp = eng.at("speculative");
  sp.allow_keys({"draft_model", "tokens", "acceptance"});
  std::string why;
  const N dn = sp.req("draft_model");
  const ModelSpec* d =
      find_named(models, dn.str(), "model", " (see `fleetsim catalog`, or define it under catalog.models)", why);
  if (!d) dn.fail(why);
  if (P.model.kind != ModelKind::generate)
    sp.fail("speculative decoding needs a generative model; " + P.model.name + " is a " +
                model_kind_name(P.model.kind) + " model",
            ErrorKind::inconsistent);
  if (d->kind != ModelKind::generate || d->vocab != P.model.vocab)
    dn.fail("a draft model must generate with the target's vocabulary (" + std::to_string(P.model.vocab) +
                " tokens); " + d->name + " has " + std::to_string(d->vocab),
            ErrorKind::inconsistent);
  if (P.shared_by() > 1)
    sp.fail("speculative decoding on a shared device (time_slicing or mps) is not modelled", ErrorKind::inconsistent);
  const std::string tp_why = tp_problem(*d, P.tp);
  if (!tp_why.empty())
    dn.fail("the draft runs at the target's tensor_parallel " + std::to_string(P.tp) + ": " + tp_why,
            ErrorKind::inconsistent);
  P.spec_draft = *d;
  P.spec_tokens = int(sp.req("tokens").integer(1, 16));
  const N an = sp.req("acceptance");
  P.spec_acceptance.clear();
  if (an.node.IsSequence()) {
    if (int(an.node.size()) != P.spec_tokens)
      an.fail("expected one acceptance rate per draft token (" + std::to_string(P.spec_tokens) + "), or a single rate");
    for (size_t i = 0; i < an.node.size(); ++i)
      P.spec_acceptance.push_back(
          N{an.node[i], an.path + "[" + std::to_string(i) + "]", an.src}.num_in(0, 1, "acceptance rate"));
  } else {
    P.spec_acceptance.assign(size_t(P.spec_tokens), an.num_in(0, 0.999, "acceptance rate"));
  }
  P.spec_tokens_per_step = spec_tokens_per_step(P.spec_acceptance);
}

}  // namespace fleetsim::detail
