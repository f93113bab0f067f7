// Sessions read from a trace (workload.arrival.sessions): a follow-up turn replies to an earlier
// request's answer (the loader links them: input/trace.hpp), so it is sent at its trace time or,
// if that answer has not ended by then, when it ends: the user cannot reply to what it has not
// read. The trace's gap between the two already holds the real server's answer time and the
// user's reading, so a fleet as fast as the real one replays the trace as recorded, and a slower
// one delays the conversation behind it.
//
// Each row's state lives in the workspace (turn_state); a turn held for its parent waits there
// until the parent ends, then joins a heap of turns due (held), which the class's next arrival
// reads beside the trace's next row (routing.hpp, trace_session_arrival).
#pragma once
#include "containers.hpp"
#include "state.hpp"
#include "tally.hpp"

namespace fleetsim {

constexpr int32_t kTurnEnded = 1;  // answered, turned away or failed
constexpr int32_t kTurnHeld = 2;   // reached in the trace before its parent ended

// The next send of class c: the trace's next row (none at or past the class's stop time) or the
// earliest released turn (a row read before the stop, so sent even after it).
FLEETSIM_HD FLEETSIM_FORCEINLINE double trace_session_next(const Sim& s, int32_t c) {
  return min_of(s.arr[c].next_t, s.held_n[c] > 0 ? s.held[s.held_base[c]].t : kInf);
}

// The replica that served the turn row `row` of class c follows up (kNone: none, or not known).
FLEETSIM_HD FLEETSIM_FORCEINLINE int32_t trace_session_home(const Sim& s, int32_t c, int64_t row) {
  const int32_t parent = s.p->classes[c].arrivals.trace_parent[row];
  return parent < 0 ? kNone : (s.turn_state[s.turn_base[c] + parent] >> 2) - 1;
}

// Row `row` of class c ended at t_end (`completed`: answered, by `replica` or kNone). A follow-up
// held for it is due now; a completed last turn ends its session, counted in the window by its end.
FLEETSIM_HD inline void trace_turn_done(Sim& s, int32_t c, int64_t row, double t_end, bool completed, int32_t replica) {
  if (row < 0) return;
  const ArrivalParams& A = s.p->classes[c].arrivals;
  int32_t* st = s.turn_state + s.turn_base[c];
  st[row] = kTurnEnded | ((replica + 1) << 2);
  const int32_t child = A.trace_child[row];
  if (child >= 0 && (st[child] & kTurnHeld)) {
    st[child] &= ~kTurnHeld;
    key_push(s.held + s.held_base[c], s.held_n[c], t_end, child);
    s.next_arrival[c] = trace_session_next(s, c);
  }
  if (completed && child < 0 && t_end >= s.W0 && t_end < s.W1) {
    int32_t turns = 1;
    int64_t root = row;
    while (A.trace_parent[root] >= 0) {
      root = A.trace_parent[root];
      ++turns;
    }
    ClassTally& T = s.tally->classes[c];
    const double d = t_end - (A.trace_t_s[root] + A.start_s);  // a first turn is never held
    T.sessions++;
    T.session_turns += double(turns);
    T.session_s += d;
    T.session_turn_s += d / double(turns);
  }
}

}  // namespace fleetsim
