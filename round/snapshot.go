package round

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/jsonkeys"
	"github.com/gpufair/gpufair/topology"
)

// snapshotVersion is the version of the snapshot format.
const snapshotVersion = 1

// Envelope is the JSON form of a Scheduler's snapshot: the mechanism's
// name, the ledger, and the mechanism's own state.
type Envelope struct {
	Version   int             `json:"version"`
	Mechanism string          `json:"mechanism"`
	Ledger    json.RawMessage `json:"ledger"`
	State     json.RawMessage `json:"state,omitempty"`
}

// Seal returns the snapshot of mechanism name, with ledger l and the
// mechanism's own state (any value encoding/json can write).
func Seal(name string, l *Ledger, state any) ([]byte, error) {
	lj, err := l.MarshalJSON()
	if err != nil {
		return nil, err
	}
	env := Envelope{Version: snapshotVersion, Mechanism: name, Ledger: lj}
	if state != nil {
		if env.State, err = json.Marshal(state); err != nil {
			return nil, fmt.Errorf("round: snapshot of %s: %w", name, err)
		}
	}
	return json.Marshal(env)
}

// Open reads a snapshot written by Seal for mechanism name: it returns a
// ledger restored into a copy of l (l itself is unchanged) and decodes the
// mechanism's state into state (a pointer). Errors wrap gpufair.ErrSnapshot;
// a key repeated within an object is one.
func Open(snapshot []byte, name string, l *Ledger, state any) (*Ledger, error) {
	// encoding/json keeps the last of a repeated key without a word; Seal
	// writes none, so one is an edit. The check reads every token: about
	// three times the decoding's cost (0.12 s for 1.2 MB), on a restart.
	if err := jsonkeys.CheckRepeats(snapshot); err != nil {
		return nil, snapErr("%v", err)
	}
	var env Envelope
	if err := strictDecode(snapshot, &env); err != nil {
		return nil, snapErr("envelope: %v", err)
	}
	switch {
	case env.Version != snapshotVersion:
		return nil, snapErr("version %d, want %d", env.Version, snapshotVersion)
	case env.Mechanism != name:
		return nil, snapErr("a snapshot of %q, not of %q", env.Mechanism, name)
	}
	nl, err := l.restored(env.Ledger)
	if err != nil {
		return nil, err
	}
	if state != nil {
		if err := strictDecode(env.State, state); err != nil {
			return nil, snapErr("%s state: %v", name, err)
		}
	}
	return nl, nil
}

// checkRestored checks a restored job's fields as Apply checks an arrival
// (gang, weight, rates, work), but not that it can run, which a measurement
// may have changed since, and the times and counts since: a value that
// Apply would have refused, restored, would fail every later decision.
func (l *Ledger) checkRestored(j *Job) error {
	if err := l.checkJobFields("Jobs", Event{Kind: Arrived, Job: j.Job, Work: j.Work}); err != nil {
		return err
	}
	ok := func(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }
	switch {
	case j.Owner == "":
		return fmt.Errorf("no owner")
	case math.IsNaN(j.Arrival) || math.IsInf(j.Arrival, 0) || j.Arrival > l.now:
		return fmt.Errorf("arrival at %v, the ledger's time is %v", j.Arrival, l.now)
	case !ok(j.Done):
		return fmt.Errorf("work done %v", j.Done)
	case j.Rounds < 0 || j.Restarts < 0 || j.Kept < 0:
		return fmt.Errorf("counts %d, %d and %d", j.Rounds, j.Restarts, j.Kept)
	}
	for k := range l.types {
		if !ok(j.Received[k]) || (j.Shared != nil && !ok(j.Shared[k])) {
			return fmt.Errorf("time received on %q", l.types[k])
		}
	}
	return nil
}

func snapErr(format string, args ...any) error {
	return gpufair.Invalid("Snapshot", "", gpufair.ErrSnapshot, format, args...)
}

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

type ledgerJSON struct {
	Cluster    topology.Cluster   `json:"cluster"`
	Types      []topology.GPUType `json:"types"`
	Now        float64            `json:"now"`
	Round      int                `json:"round"`
	Generation int                `json:"generation"`
	Jobs       []*Job             `json:"jobs"`
	Failed     []failedGPU        `json:"failed,omitempty"`
	Lease      *Decision          `json:"lease,omitempty"`
	Cut        []cutJob           `json:"cut,omitempty"`
}

type failedGPU struct {
	GPU  topology.GPU `json:"gpu"`
	Time float64      `json:"time"`
}

type cutJob struct {
	Job  alloc.JobID `json:"job"`
	Time float64     `json:"time"`
}

// MarshalJSON writes the whole ledger. It is an error to call it between
// Begin and Commit.
func (l *Ledger) MarshalJSON() ([]byte, error) {
	if l.begun != nil {
		return nil, gpufair.Invalid("Snapshot", "", gpufair.ErrOrder, "round begun and not committed")
	}
	v := ledgerJSON{Cluster: l.cluster, Types: l.types, Now: l.now, Round: l.round, Generation: l.gen, Jobs: l.order, Lease: l.lease}
	for _, g := range l.FailedGPUs() {
		v.Failed = append(v.Failed, failedGPU{g, l.failed[g]})
	}
	for id, t := range l.cut {
		v.Cut = append(v.Cut, cutJob{id, t})
	}
	slices.SortFunc(v.Cut, func(a, b cutJob) int { return cmp.Compare(a.Job, b.Job) })
	return json.Marshal(v)
}

// restored returns a new ledger for l's cluster and types with the state
// of b, checked for consistency.
func (l *Ledger) restored(b []byte) (*Ledger, error) {
	var v ledgerJSON
	if err := strictDecode(b, &v); err != nil {
		return nil, snapErr("ledger: %v", err)
	}
	if !slices.Equal(v.Cluster.Servers, l.cluster.Servers) || !slices.Equal(v.Types, l.types) {
		return nil, snapErr("a snapshot of another cluster or set of GPU types")
	}
	nl, _ := NewLedger(l.cluster, l.types) // l's cluster and types are valid
	if math.IsNaN(v.Now) || math.IsInf(v.Now, 0) || v.Round < 0 {
		return nil, snapErr("time %v, round %d", v.Now, v.Round)
	}
	nl.now, nl.round, nl.gen = v.Now, v.Round, v.Generation
	for _, j := range v.Jobs {
		switch {
		case j == nil || j.ID == "" || nl.jobs[j.ID] != nil:
			return nil, snapErr("a job that is missing, unnamed or listed twice")
		case len(j.Received) != len(nl.types) || (j.Shared != nil && len(j.Shared) != len(nl.types)):
			return nil, snapErr("job %q: %d received times and %d shared for %d types", j.ID, len(j.Received), len(j.Shared), len(nl.types))
		}
		if err := nl.checkRestored(j); err != nil {
			return nil, snapErr("job %q: %v", j.ID, err)
		}
		nl.jobs[j.ID] = j
		nl.order = append(nl.order, j)
	}
	if !slices.IsSortedFunc(nl.order, byArrival) {
		return nil, snapErr("jobs out of (arrival, ID) order")
	}
	rates := make([][]float64, len(nl.order))
	for i, j := range nl.order {
		rates[i] = j.Rates
	}
	if low, k, high := rateOutlier(rates); low >= 0 {
		return nil, snapErr("job %q's rate %v on %q is more than %v times below job %q's largest", nl.order[low].ID, rates[low][k], nl.types[k], alloc.MaxRateSpread, nl.order[high].ID)
	}
	for _, f := range v.Failed {
		g := f.GPU
		if !nl.cluster.Has(g) {
			return nil, snapErr("failed GPU %v does not exist", g)
		}
		nl.failed[g] = f.Time
	}
	for _, c := range v.Cut {
		nl.cut[c.Job] = c.Time
	}
	if v.Lease != nil {
		// A lease starts at the decision that made it; events since
		// move the clock on, never back.
		if d := v.Lease; !(d.Start <= v.Now) || !(d.End > d.Start) {
			return nil, snapErr("lease from %v to %v at time %v", d.Start, d.End, v.Now)
		}
		// Check the lease as a decision of the restored state: its jobs
		// may have departed since, so only its slots are checked.
		for _, p := range v.Lease.Placements {
			if slices.Index(nl.types, p.Type) < 0 {
				return nil, snapErr("lease on unknown GPU type %q", p.Type)
			}
			for _, g := range p.GPUs {
				if !nl.cluster.Has(g) {
					return nil, snapErr("lease on GPU %v, which does not exist", g)
				}
			}
		}
		nl.setLease(v.Lease)
	}
	return nl, nil
}
