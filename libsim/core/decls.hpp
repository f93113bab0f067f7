// The calls that go against the include order, declared once and defined later in the same
// translation unit: a step can fail or stop its replica (lifecycle.hpp), offers work to the
// other replicas of a shared queue (cont_kick and cq_*, defined after cont_start_step in
// continuous.hpp), and hands finished requests to the host CPU stage (host.hpp).
#pragma once
#include "state.hpp"

namespace fleetsim {

FLEETSIM_HD inline void cont_kick(Sim& s, int32_t r, double t);
FLEETSIM_HD inline void cq_offer(Sim& s, int32_t pi, int32_t except, double t);
FLEETSIM_HD inline void cq_wake_next(Sim& s, int32_t pi, double t);
FLEETSIM_HD inline void cq_clear_note(Sim& s, int32_t r);
FLEETSIM_HD inline void replica_off(Sim& s, int32_t r, double t);
// owned: an owned pool's device (to repair), not one of its rented ones
FLEETSIM_HD inline void replica_fail(Sim& s, int32_t r, double t, bool new_node, int32_t culprit, bool owned = true);
// the host CPU stage (host.hpp): a request the device finished, and a replica's host jobs when it
// is lost or becomes ready
FLEETSIM_HD inline void device_done(Sim& s, int32_t r, int32_t ri, double t);
FLEETSIM_HD inline void host_lose(Sim& s, int32_t r, double t);
FLEETSIM_HD inline void host_reroute(Sim& s, int32_t r, double t);
FLEETSIM_HD inline void host_fill(Sim& s, int32_t r, double t);

}  // namespace fleetsim
