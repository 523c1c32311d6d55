package round

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// ErrPlacement reports a decision that breaks the contract: a placement of
// a job not in the system or placed twice, of the wrong number of GPUs, on
// GPUs of several types, of a type the job cannot run on, on a slot used
// twice, or on a failed GPU. It is a mechanism's bug, never the caller's.
var ErrPlacement = errors.New("round: invalid placement")

// undo is what Begin changed, for Abort.
type undo struct {
	now      float64
	received map[alloc.JobID][2][]float64 // Received and Shared before Begin
}

// Begin starts the round that begins at now: it accounts the time each job
// of the lease in force ran, up to now (or to the lease's end, or to the
// job's departure or the failure of one of its GPUs), so that Job.Received
// and Job.Fraction are up to date. It returns an *gpufair.InputError
// wrapping gpufair.ErrOrder, and changes nothing, if now is earlier than
// the latest event, or not after the start of the lease in force, and
// gpufair.ErrValue if now is not finite. A round begun must be ended with
// Commit or Abort.
func (l *Ledger) Begin(now float64) error {
	switch {
	case l.begun != nil:
		return gpufair.Invalid("Begin", "", gpufair.ErrOrder, "round at %v begun and not committed", l.now)
	case math.IsNaN(now) || math.IsInf(now, 0):
		return gpufair.Invalid("Decide.Now", "", gpufair.ErrValue, "time %v", now)
	case now < l.now:
		return gpufair.Invalid("Decide.Now", "", gpufair.ErrOrder, "round at %v, before the latest event or round, at %v", now, l.now)
	case l.lease != nil && now <= l.lease.Start:
		return gpufair.Invalid("Decide.Now", "", gpufair.ErrOrder, "round at %v, after a round at %v", now, l.lease.Start)
	}
	u := &undo{now: l.now, received: map[alloc.JobID][2][]float64{}}
	if d := l.lease; d != nil {
		for _, p := range d.Placements {
			k := slices.Index(l.types, p.Type)
			for _, id := range p.Jobs {
				j, ok := l.jobs[id]
				if !ok {
					continue
				}
				end := min(now, d.End)
				if c, ok := l.cut[id]; ok {
					end = min(end, c)
				}
				if _, saved := u.received[id]; !saved {
					u.received[id] = [2][]float64{slices.Clone(j.Received), slices.Clone(j.Shared)}
				}
				t := max(end-d.Start, 0)
				j.Received[k] += t
				if len(p.Jobs) > 1 {
					if j.Shared == nil {
						j.Shared = make([]float64, len(l.types))
					}
					j.Shared[k] += t
				}
			}
		}
	}
	l.now, l.begun = now, u
	return nil
}

// Abort undoes Begin.
func (l *Ledger) Abort() {
	if l.begun == nil {
		return
	}
	for id, r := range l.begun.received {
		l.jobs[id].Received, l.jobs[id].Shared = r[0], r[1]
	}
	l.now, l.begun = l.begun.now, nil
}

// Commit records d as the decision of the round begun, and its placements
// as the lease in force for [d.Start, d.End). It sets d.Round and each
// placement's Renewed and Restart flags (a renewal: the same jobs held the
// same slots until d.Start). It returns an error wrapping ErrPlacement, and
// aborts the round, if d breaks the contract (see ErrPlacement),
// gpufair.ErrOrder if no round was begun at d.Start or d.End is not after
// it, and gpufair.ErrValue if d.End is +Inf.
func (l *Ledger) Commit(d *Decision) error {
	if l.begun == nil || d.Start != l.now || !(d.End > d.Start) {
		l.Abort()
		return gpufair.Invalid("Decision", "", gpufair.ErrOrder, "decision for [%v, %v), round begun at %v", d.Start, d.End, l.now)
	}
	if math.IsInf(d.End, 1) {
		// A lease that never ends cannot be snapshotted: Seal failed on +Inf.
		l.Abort()
		return gpufair.Invalid("Decision.End", "", gpufair.ErrValue, "lease end %v", d.End)
	}
	if err := l.checkDecision(d); err != nil {
		l.Abort()
		return err
	}
	d.Round = l.round
	kept := make(map[alloc.JobID]int, len(d.Placements))
	for i := range d.Placements {
		p := &d.Placements[i]
		// Renewed: every job of p held these slots until now (a pair that
		// lost its partner goes on where it was).
		p.Renewed = true
		for _, id := range p.Jobs {
			if q, ok := l.Holding(id); !ok || !sameSlots(q.GPUs, p.GPUs) {
				p.Renewed = false
			}
		}
		p.Restart = false
		for _, id := range p.Jobs {
			if !p.Renewed && l.jobs[id].Rounds > 0 {
				p.Restart = true
			}
		}
		for _, id := range p.Jobs {
			j := l.jobs[id]
			j.Rounds++
			if p.Restart {
				j.Restarts++
			}
			kept[id] = 1
			if p.Renewed {
				kept[id] = j.Kept + 1
			}
		}
	}
	if old := l.lease; old != nil {
		for _, p := range old.Placements {
			for _, id := range p.Jobs {
				if j, ok := l.jobs[id]; ok {
					j.Kept = 0
				}
			}
		}
	}
	for id, n := range kept {
		l.jobs[id].Kept = n
	}
	l.setLease(d)
	clear(l.cut)
	l.round++
	l.begun = nil
	return nil
}

func (l *Ledger) checkDecision(d *Decision) error {
	used := map[topology.GPU]bool{}
	placed := map[alloc.JobID]bool{}
	for i, p := range d.Placements {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: round %d, placement %d: "+format, append([]any{ErrPlacement, l.round, i}, args...)...)
		}
		k := slices.Index(l.types, p.Type)
		if k < 0 {
			return bad("GPU type %q is not among the ledger's", p.Type)
		}
		if len(p.Jobs) == 0 {
			return bad("no jobs")
		}
		for _, id := range p.Jobs {
			j, ok := l.jobs[id]
			switch {
			case !ok:
				return bad("job %q is not in the system", id)
			case placed[id]:
				return bad("job %q placed twice", id)
			case len(p.GPUs) != j.Gang && !(j.Elastic && len(p.GPUs) >= 1 && len(p.GPUs) <= j.Gang):
				return bad("job %q has %d GPUs for a gang of %d", id, len(p.GPUs), j.Gang)
			case !(j.Rates[k] > 0):
				return bad("job %q cannot run on %q", id, p.Type)
			}
			placed[id] = true
		}
		for _, g := range p.GPUs {
			switch {
			case !l.cluster.Has(g):
				return bad("slot %v does not exist", g)
			case l.typeOf[g.Server] != k:
				return bad("slot %v is not a %q GPU", g, p.Type)
			case used[g]:
				return bad("slot %v used twice", g)
			case l.Failed(g):
				return bad("slot %v has failed", g)
			}
			used[g] = true
		}
	}
	return nil
}

// sameSlots reports whether a and b hold the same slots, in any order.
func sameSlots(a, b []topology.GPU) bool {
	if len(a) != len(b) {
		return false
	}
	for _, g := range a {
		if !slices.Contains(b, g) {
			return false
		}
	}
	return true
}

func gpuName(g topology.GPU) string { return fmt.Sprintf("%d/%d", g.Server, g.Slot) }
