// engine.speculative: a draft model, or heads on the target's hidden states (EAGLE, MTP), proposing
// tokens for the target to verify (docs/model.md, "Speculative decoding"). Parsed once the pool's
// model, tensor parallelism and sharing are known.
#include <fmt/format.h>

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

namespace {

// Speculative heads (EAGLE, MTP): `layers` decoder layers of the target's own shape on its hidden
// states, behind an input projection of two hidden states to one, ending in an LM head: the
// target's, shared (read every draft step, held once), or one of their own of `vocab` tokens. As a
// model of their own, what they hold; the shared LM head's parameters apart (P.spec_shared_head_params).
ModelSpec speculative_heads(const ModelSpec& target, int layers, int vocab) {
  ModelSpec d = target;
  d.name = target.name + " heads";
  const double tables = double(target.vocab) * target.hidden * (target.tied_embeddings ? 1.0 : 2.0);
  const double per_layer = (target.params_b * 1e9 - tables) / target.layers;
  const double projection = 2.0 * double(target.hidden) * target.hidden;
  d.layers = layers;
  d.sliding_layers = d.sliding_window = 0;
  d.vocab = vocab;  // 0: the target's LM head, not held again
  d.tied_embeddings = true;
  d.params_b = (layers * per_layer + projection + double(vocab) * target.hidden) / 1e9;
  d.notes = "speculative heads of " + target.name;
  return d;
}

}  // namespace

void parse_speculative(const N& eng, const std::vector<ModelSpec>& models, PoolSpec& P) {
  if (!eng.has("speculative")) return;
  const N sp = eng.at("speculative");
  sp.allow_keys({"draft_model", "draft_layers", "draft_vocab", "tokens", "acceptance"});
  std::string why;
  if (P.model.kind != ModelKind::generate)
    sp.fail("speculative decoding needs a generative model; " + P.model.name + " is a " +
                model_kind_name(P.model.kind) + " model",
            ErrorKind::inconsistent);
  if (sp.has("draft_model") == sp.has("draft_layers"))
    sp.fail(std::string(sp.has("draft_model") ? "both draft_model and draft_layers given" : "no draft given") +
            ": expected one of draft_model (a model of its own) or draft_layers (heads on the target's hidden "
            "states, as EAGLE and MTP)");
  if (sp.has("draft_vocab") && !sp.has("draft_layers"))
    sp.at("draft_vocab")
        .fail("draft_vocab applies to heads (draft_layers); a draft model has its own vocabulary",
              ErrorKind::inconsistent);
  if (P.shared_by() > 1)
    sp.fail("speculative decoding on a shared device (time_slicing or mps) is not modelled", ErrorKind::inconsistent);
  if (P.pp > 1)
    sp.fail(
        "speculative decoding with pipeline parallelism is not modelled (vLLM refuses the two together): "
        "use tensor parallelism, or drop engine.speculative",
        ErrorKind::inconsistent);
  P.spec_shared_head_params = 0;
  P.spec_heads = 0;
  if (sp.has("draft_layers")) {
    const N ln = sp.at("draft_layers");
    if (P.model.moe() || P.model.mla())
      ln.fail("heads of a mixture-of-experts or latent-attention target (" + P.model.name +
                  ") are not modelled: name a draft_model",
              ErrorKind::inconsistent);
    const int layers = int(ln.integer(1, 1 << 16));  // (the bound that matters is the target's, below)
    if (layers > P.model.layers)
      ln.fail(P.model.name + " has " + std::to_string(P.model.layers) + " layers; heads can have at most that",
              ErrorKind::inconsistent);
    const int vocab = sp.has("draft_vocab") ? int(sp.at("draft_vocab").integer(1, P.model.vocab)) : 0;
    P.spec_draft = speculative_heads(P.model, layers, vocab);
    P.spec_heads = layers;
    if (vocab == 0) P.spec_shared_head_params = double(P.model.vocab) * P.model.hidden;
  } else {
    const N dn = sp.req("draft_model");
    const ModelSpec* d =
        find_named(models, dn.str(), "model", " (see `fleetsim catalog`, or define it under catalog.models)", why);
    if (!d) dn.fail(why);
    if (d->kind != ModelKind::generate)
      dn.fail("a draft model must generate; " + d->name + " is a " + model_kind_name(d->kind) + " model",
              ErrorKind::inconsistent);
    if (d->vocab != P.model.vocab)
      dn.fail("a draft model must generate with the target's vocabulary (" + std::to_string(P.model.vocab) +
                  " tokens); " + d->name + " has " + std::to_string(d->vocab),
              ErrorKind::inconsistent);
    // a draft's step reads and computes every weight it has: the routing of a mixture of experts is
    // the target's alone (moe.hpp), so such a draft would be priced at all its experts
    if (d->moe())
      dn.fail(fmt::format("a mixture-of-experts draft model ({}: {:.1f}B parameters, {:.1f}B active) is not modelled: "
                          "name a dense draft_model",
                          d->name, d->params_b, d->active_params() / 1e9),
              ErrorKind::inconsistent);
    // a draft pays only for being cheaper per token than the target it drafts for
    if (d->active_params() >= P.model.active_params())
      dn.fail(fmt::format("a draft must be smaller than its target: {} computes {:.1f}B parameters a token, the "
                          "target {} {:.1f}B, so drafting costs at least what it would save (choose a smaller "
                          "draft_model)",
                          d->name, d->active_params() / 1e9, P.model.name, P.model.active_params() / 1e9),
              ErrorKind::inconsistent);
    const std::string tp_why = tp_problem(*d, P.tp);
    if (!tp_why.empty())
      dn.fail("the draft runs at the target's tensor_parallel " + std::to_string(P.tp) + ": " + tp_why,
              ErrorKind::inconsistent);
    P.spec_draft = *d;
  }
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
