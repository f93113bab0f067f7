// The batch slots of a continuous-batching replica: its admission-order and prefill lists, freeing
// a slot, and taking a sequence out of the decoding set.
#pragma once
#include "containers.hpp"
#include "state.hpp"

namespace fleetsim {

FLEETSIM_HD inline void list_remove_run(Sim& s, int32_t r, int32_t sl) {
  Replica& R = s.rep[r];
  Seq& x = slot(s, r, sl);
  if (x.prev != kNone)
    slot(s, r, x.prev).next = x.next;
  else
    R.run_head = x.next;
  if (x.next != kNone)
    slot(s, r, x.next).prev = x.prev;
  else
    R.run_tail = x.prev;
}
FLEETSIM_HD inline void list_remove_pf(Sim& s, int32_t r, int32_t sl) {
  Replica& R = s.rep[r];
  Seq& x = slot(s, r, sl);
  if (x.pf_prev != kNone)
    slot(s, r, x.pf_prev).pf_next = x.pf_next;
  else
    R.pf_head = x.pf_next;
  if (x.pf_next != kNone)
    slot(s, r, x.pf_next).pf_prev = x.pf_prev;
  else
    R.pf_tail = x.pf_prev;
}
FLEETSIM_HD inline void release_slot(Sim& s, int32_t r, int32_t sl) {
  Replica& R = s.rep[r];
  if (slot(s, r, sl).ctx_extra > 0 && s.req[slot(s, r, sl).req].has_prefix)
    R.prefix_users[s.req[slot(s, r, sl).req].cls]--;
  list_remove_run(s, r, sl);
  slot(s, r, sl).next = R.free_head;
  R.free_head = sl;
  R.n_running--;
  lo_touch(s, R);
}

FLEETSIM_HD inline void stop_decoding(Sim& s, int32_t r, int32_t sl) {
  Replica& R = s.rep[r];
  Seq& x = slot(s, r, sl);
  fh_remove(s, r, sl);
  rescnt_of(s, r)[x.residue]--;
  R.A -= x.L0 + x.ctx_extra - x.s0;
  R.n_decode--;
  R.n_decode_class[s.req[x.req].cls]--;
  x.decoding = 0;
}

}  // namespace fleetsim
