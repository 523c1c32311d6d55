package alloc_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/testcases"
	"github.com/gpufair/gpufair/topology"
	"github.com/gpufair/gpufair/trade"
)

var twoTypes = alloc.Capacity{Types: []topology.GPUType{"GPU1", "GPU2"}, Count: []float64{1, 1}}

func labels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("u", i+1)
	}
	return out
}

// equalSplit ignores the reports: it is strategy-proof.
func equalSplit(_ context.Context, reported [][]float64) (*alloc.Allocation, error) {
	a := alloc.NewAllocation(labels(len(reported)), twoTypes)
	for i := range a.GPUs {
		for k, n := range twoTypes.Count {
			a.GPUs[i][k] = n / float64(len(reported))
		}
	}
	return a, nil
}

// maxEfficiency gives every type to the highest reported rate, ties to the
// lowest row: OEF's expression (5), which invites inflated reports.
func maxEfficiency(_ context.Context, reported [][]float64) (*alloc.Allocation, error) {
	a := alloc.NewAllocation(labels(len(reported)), twoTypes)
	for k, n := range twoTypes.Count {
		best := 0
		for i := range reported {
			if reported[i][k] > reported[best][k] {
				best = i
			}
		}
		a.GPUs[best][k] = n
	}
	return a, nil
}

// humblest gives the fast type to the row reporting the lowest speedup on
// it and splits the slow type: only under-reporting pays.
func humblest(_ context.Context, reported [][]float64) (*alloc.Allocation, error) {
	a := alloc.NewAllocation(labels(len(reported)), twoTypes)
	low := 0
	for i := range reported {
		a.GPUs[i][0] = 1 / float64(len(reported))
		if reported[i][1] < reported[low][1] {
			low = i
		}
	}
	a.GPUs[low][1] = 1
	return a, nil
}

// gandivaFair runs Gandiva_fair's second-price trading (package trade) from
// an equal split.
func gandivaFair(_ context.Context, reported [][]float64) (*alloc.Allocation, error) {
	m, err := trade.NewMarket(twoTypes.Types, twoTypes.Count, nil)
	if err != nil {
		return nil, err
	}
	ids := labels(len(reported))
	for i, r := range reported {
		u := trade.Bidder{Tenant: alloc.Tenant{ID: alloc.TenantID(ids[i]), Weight: 1}, Rates: map[topology.GPUType]float64{"GPU1": r[0], "GPU2": r[1]}}
		if _, err := m.Join(u, 0); err != nil {
			return nil, err
		}
	}
	if _, err := m.Run(context.Background(), 1); err != nil {
		return nil, err
	}
	a := alloc.NewAllocation(ids, twoTypes)
	for i, id := range ids {
		h, _ := m.Holdings(alloc.TenantID(id))
		copy(a.GPUs[i], h)
	}
	return a, nil
}

func oefTruth() [][]float64 { return testcases.OEFGandivaFair().Speedups }

// replay checks a probe's witness independently: running mech on the
// misreport must give row the reported gain under its true rates.
func replay(t *testing.T, mech alloc.Mechanism, truth [][]float64, r *alloc.StrategyReport) {
	t.Helper()
	ctx := context.Background()
	base, _ := mech(ctx, truth)
	lied := append([][]float64(nil), truth...)
	lied[r.Row] = r.Misreport
	x, err := mech(ctx, lied)
	if err != nil {
		t.Fatal(err)
	}
	v := alloc.Linear(truth[r.Row])
	before, after := v.Value(base.GPUs[r.Row]), v.Value(x.GPUs[r.Row])
	if !(after > before) {
		t.Fatalf("witness row %d reporting %v: true value %v → %v, no gain", r.Row, r.Misreport, before, after)
	}
	if before > 0 && math.Abs(after/before-1-r.Gain) > 1e-12 {
		t.Errorf("Gain = %v, replay gives %v", r.Gain, after/before-1)
	}
}

func TestProbeStrategyProofness(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		reason    string
		mech      alloc.Mechanism
		any       bool
		wantHolds bool
	}{
		{"equal split", "ignores reports", equalSplit, true, true},
		{"max efficiency", "OEF §3.1.1 (5): u1 and u2 gain by inflating their fast rate", maxEfficiency, false, false},
		{"humblest, inflations", "only under-reports pay, and inflations are all OEF §2.3.1 asks about", humblest, false, true},
		{"humblest, any misreport", "under-reporting the fast rate wins the fast GPU", humblest, true, false},
		{"Gandiva_fair trading", "OEF §2.4: u1 raising 2 to 2.8 pays", gandivaFair, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := alloc.ProbeStrategyProofness(ctx, tc.mech, oefTruth(), &alloc.ProbeSettings{Seed: 1, AnyMisreport: tc.any})
			if err != nil {
				t.Fatal(err)
			}
			if r.Holds != tc.wantHolds {
				t.Fatalf("Holds = %v, want %v (%s): row %d gains %v reporting %v", r.Holds, tc.wantHolds, tc.reason, r.Row, r.Gain, r.Misreport)
			}
			if !r.Holds {
				replay(t, tc.mech, oefTruth(), r)
			}
			again, err := alloc.ProbeStrategyProofness(ctx, tc.mech, oefTruth(), &alloc.ProbeSettings{Seed: 1, AnyMisreport: tc.any})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(r, again); diff != "" {
				t.Errorf("same seed, different report (-first +second):\n%s", diff)
			}
		})
	}
}

// TestProbeGandivaFairPaperLie replays OEF §2.4's own misreport: u1 raising
// its GPU2 speedup from 2 to 2.8 under Gandiva_fair's trading gains.
func TestProbeGandivaFairPaperLie(t *testing.T) {
	r, err := alloc.ProbeStrategyProofness(context.Background(), gandivaFair, oefTruth(),
		&alloc.ProbeSettings{Rows: []int{0}, Factors: []float64{1.4}, Trials: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Holds || r.Row != 0 {
		t.Fatalf("Holds = %v, row %d, want u1 (row 0) to gain", r.Holds, r.Row)
	}
	if r.RowGains[0] <= 0 {
		t.Errorf("RowGains[0] = %v, want > 0", r.RowGains[0])
	}
	replay(t, gandivaFair, oefTruth(), r)
}

// TestProbeInflationsOnly checks that without AnyMisreport every report
// tried is an inflation of the probed row (OEF §2.3.1) and that the other
// rows stay truthful.
func TestProbeInflationsOnly(t *testing.T) {
	truth := [][]float64{{1, 2}, {1, 0}, {0.5, 3}}
	var bad []string
	var calls int
	spy := func(ctx context.Context, reported [][]float64) (*alloc.Allocation, error) {
		calls++
		lying := 0
		for i, row := range reported {
			for k, x := range row {
				if x < truth[i][k] {
					bad = append(bad, fmt.Sprintf("row %d reports %v < %v", i, x, truth[i][k]))
				}
				if x != truth[i][k] {
					lying |= 1 << i
				}
			}
		}
		if lying&(lying-1) != 0 {
			bad = append(bad, fmt.Sprintf("several rows lie: %v", reported))
		}
		return equalSplit(ctx, reported)
	}
	r, err := alloc.ProbeStrategyProofness(context.Background(), spy, truth, &alloc.ProbeSettings{Seed: 7, Trials: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("%d bad reports, first: %s", len(bad), bad[0])
	}
	if calls != r.Tried+1 || r.Tried < 3*50 {
		t.Errorf("mechanism called %d times for %d misreports (+1 truthful), want at least 150 misreports", calls, r.Tried)
	}
	// A zero true rate is inflated to a positive one too.
	if r.Failed != 0 {
		t.Errorf("Failed = %d, want 0", r.Failed)
	}
}

func TestProbeErrors(t *testing.T) {
	ctx := context.Background()
	failing := func(context.Context, [][]float64) (*alloc.Allocation, error) { return nil, errors.New("boom") }
	wrongShape := func(context.Context, [][]float64) (*alloc.Allocation, error) {
		return alloc.NewAllocation([]string{"x"}, twoTypes), nil
	}
	for _, tc := range []struct {
		name      string
		mech      alloc.Mechanism
		truth     [][]float64
		s         *alloc.ProbeSettings
		wantField string
	}{
		{"nil mechanism", nil, oefTruth(), nil, "Mechanism"},
		{"empty truth", equalSplit, nil, nil, "Truth"},
		{"ragged truth", equalSplit, [][]float64{{1, 2}, {1}}, nil, "Truth"},
		{"NaN truth", equalSplit, [][]float64{{1, math.NaN()}}, nil, "Truth"},
		{"negative truth", equalSplit, [][]float64{{1, -2}}, nil, "Truth"},
		{"row out of range", equalSplit, oefTruth(), &alloc.ProbeSettings{Rows: []int{3}}, "ProbeSettings.Rows"},
		{"wrong shape", wrongShape, oefTruth(), nil, "Mechanism"},
		{"failing mechanism", failing, oefTruth(), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := alloc.ProbeStrategyProofness(ctx, tc.mech, tc.truth, tc.s)
			if err == nil {
				t.Fatal("no error")
			}
			var ie *gpufair.InputError
			if tc.wantField == "" {
				if errors.As(err, &ie) {
					t.Errorf("error %v is an gpufair.InputError, want the mechanism's", err)
				}
				return
			}
			if !errors.As(err, &ie) || ie.Field != tc.wantField {
				t.Errorf("error = %v, want an *gpufair.InputError on %s", err, tc.wantField)
			}
		})
	}
}
