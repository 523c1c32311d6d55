// Package round is the contract between a cluster scheduler and the
// mechanism that decides, round after round, which gangs run on which GPU
// slots. A production scheduler and the simulator (package sim) drive it in
// exactly the same way:
//
//	s.Apply(events...)          // jobs arrived, progressed, departed; GPUs failed, repaired; rates measured
//	d, err := s.Decide(ctx, now) // one decision: gangs on GPU slots, each leased until d.End
//	snap, err := s.Snapshot()    // the whole state, as JSON; Restore resumes from it
//
// Events carry times in seconds on the caller's clock and must come in
// order: an event or decision earlier than the latest one seen is refused
// with gpufair.ErrOrder. Apply checks every event of a call before it
// changes anything, so a refused call leaves the state as it was; so do
// Decide and Restore when they fail. What Apply takes, every mechanism can
// decide on (Ledger.Apply says what it refuses), and Restore checks a
// snapshot's jobs as Apply checks arrivals.
//
// A Decision holds for one lease, [Start, End). The mechanism accounts the
// time each gang actually ran from its own decisions: a lease ends early
// when the job departs or a GPU of its gang fails. A placement is Renewed
// when the same jobs keep the same slots as in the lease before, so that
// they need no checkpoint and restart.
//
// Ledger holds the state every mechanism shares (jobs, their progress and
// the time they received on each GPU type, failed GPUs, the lease in force)
// and checks events and decisions against it. Mechanisms embed it: Gavel's
// rounds (stride.Gavel) over any fractional policy of package alloc, and the
// other papers' mechanisms.
package round
