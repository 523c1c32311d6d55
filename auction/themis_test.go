package sim

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair/auction"
)

// TestThemisSchedulerRuns replays a small Gavel workload under Themis'
// arbiter with 10-minute leases and f = 0.8 in 2-minute rounds: every job
// finishes, and the same seed gives the same results.
func TestThemisSchedulerRuns(t *testing.T) {
	w, c := smallGavel(t, 30, 3)
	run := func() *Result {
		s, err := NewThemisScheduler(c, w.Types, &auction.ArbiterSettings{Filter: 0.8}, rand.NewPCG(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), w, c, s, &Settings{Round: 120})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run()
	if s := res.Summary(); s.Finished != len(w.Jobs) {
		t.Fatalf("%d of %d jobs finished", s.Finished, len(w.Jobs))
	}
	if diff := cmp.Diff(res, run(), cmp.Comparer(sameFloat)); diff != "" {
		t.Errorf("second run differs (-first +second):\n%s", diff)
	}
}
