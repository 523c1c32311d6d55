package trade_test

import (
	"context"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
	"github.com/gpufair/gpufair/trade"
)

// A bidder whose Demand its fast GPUs already fill sets no second price: it
// would buy no fast GPU at any price. A (Demand 1, 2.9x) holds 1.33 V100s;
// B (3x) buys from C (2x) at the mean of their speedups, 2.5, not at A's
// 2.9.
func TestSecondPriceNeedsDemand(t *testing.T) {
	types := []topology.GPUType{"k80", "v100"}
	m := newMarket(t, types, []float64{4, 4}, nil,
		trade.Bidder{Tenant: alloc.Tenant{ID: "A", Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 2.9}, Demand: 1},
		trade.Bidder{Tenant: alloc.Tenant{ID: "B", Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 3}},
		trade.Bidder{Tenant: alloc.Tenant{ID: "C", Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 2}},
	)
	got, err := m.Run(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []trade.Trade{{Quantum: 1, Fast: "v100", Slow: "k80", Buyer: "B", Seller: "C", FastGPUs: 4.0 / 3 / 2.5, SlowGPUs: 4.0 / 3, Rate: 2.5}}
	if diff := gocmp.Diff(want, got, cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("trades mismatch (-want +got):\n%s", diff)
	}
}
