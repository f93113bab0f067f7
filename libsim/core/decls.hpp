// The calls that go against the include order, declared once and defined later in the same
// translation unit: a step can fail or stop its replica (lifecycle.hpp), and offers work to the
// other replicas of a shared queue (cont_kick and cq_*, defined after cont_start_step in
// continuous.hpp).
#pragma once
#include "state.hpp"

namespace fleetsim {

FLEETSIM_HD inline void cont_kick(Sim& s, int32_t r, double t);
FLEETSIM_HD inline void cq_offer(Sim& s, int32_t pi, int32_t except, double t);
FLEETSIM_HD inline void cq_wake_next(Sim& s, int32_t pi, double t);
FLEETSIM_HD inline void replica_off(Sim& s, int32_t r, double t);
FLEETSIM_HD inline void replica_fail(Sim& s, int32_t r, double t, bool new_node, int32_t culprit);

}  // namespace fleetsim
