package auction

import (
	"context"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"pgregory.net/rapid"
)

// TestPartialAllocationAxioms holds the one-shot auction with linear
// valuations to the library's generic checks: the proportionally fair
// allocation x* passes alloc.ParetoEfficiency (an LP searching for an
// allocation that lowers no one and raises someone), and
// alloc.ProbeStrategyProofness, allowed any misreport (each rate, suffix and
// prefix of rates scaled by 0, 0.5, 2 or 10, and random scalings with zeroed
// rates; a small grid to keep the test fast), finds none that raises a
// bidder's true value of its final allocation c_i·x*_i.
func TestPartialAllocationAxioms(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mk := genMarket().Draw(t, "market")
		n := len(mk.vals)
		truth := make([][]float64, n)
		lin := make([]alloc.Linear, n)
		for i, v := range mk.vals {
			lin[i] = v.(alloc.Linear)
			truth[i] = lin[i]
		}
		ctx := context.Background()
		out, err := PartialAllocation(ctx, mk.c, names(n), mk.vals, nil)
		if err != nil {
			t.Fatal(err)
		}
		pe, err := alloc.ParetoEfficiency(ctx, out.PF.Alloc, mk.c, lin, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !pe.Holds {
			t.Fatalf("x* not Pareto-efficient: gain %v at %v", pe.Gain, pe.Witness.GPUs)
		}
		mech := func(ctx context.Context, reported [][]float64) (*alloc.Allocation, error) {
			vals := make([]alloc.Valuation, len(reported))
			for i, r := range reported {
				vals[i] = alloc.Linear(r)
			}
			o, err := PartialAllocation(ctx, mk.c, names(len(vals)), vals, nil)
			if err != nil {
				return nil, err
			}
			return o.Final, nil
		}
		sp, err := alloc.ProbeStrategyProofness(ctx, mech, truth, &alloc.ProbeSettings{Seed: 1, Trials: 2, AnyMisreport: true, Factors: []float64{0, 0.5, 2, 10}})
		if err != nil {
			t.Fatal(err)
		}
		if !sp.Holds {
			t.Fatalf("bidder %d gains %v reporting %v instead of %v", sp.Row, sp.Gain, sp.Misreport, truth[sp.Row])
		}
	})
}
