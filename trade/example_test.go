package trade_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
	"github.com/gpufair/gpufair/trade"
)

// Gandiva_fair Table 3: 60 K80s and 12 V100s shared by A (1.25x on a V100),
// B (5x) and C (6.25x). C buys A's V100s at the second price, B's 5 K80s
// per V100.
func ExampleMarket() {
	m, _ := trade.NewMarket([]topology.GPUType{"K80", "V100"}, []float64{60, 12}, &trade.Settings{Unit: 1})
	for _, u := range []struct {
		id    alloc.TenantID
		speed float64
	}{{"A", 1.25}, {"B", 5}, {"C", 6.25}} {
		_, _ = m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: u.id, Weight: 1}, Rates: map[topology.GPUType]float64{"K80": 1, "V100": u.speed}}, 0)
	}
	trades, _ := m.Run(context.Background(), 1)
	for _, t := range trades {
		fmt.Println(t)
	}
	for _, u := range []alloc.TenantID{"A", "B", "C"} {
		h, _ := m.Holdings(u)
		v, _ := m.Value(u)
		fmt.Printf("%s: %v K80, %v V100, throughput %v\n", u, h[0], h[1], v)
	}
	// A new user arrives: the trades are undone (negative rates) before
	// shares are recomputed.
	undone, _ := m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: "D", Weight: 1}, Rates: map[topology.GPUType]float64{"K80": 1, "V100": 2}}, 2)
	fmt.Println(len(undone), "undone, first:", undone[0])
	// Output:
	// V100/C K80/A 5
	// V100/C K80/A 5
	// V100/C K80/A 5
	// V100/C K80/A 5
	// A: 40 K80, 0 V100, throughput 40
	// B: 20 K80, 4 V100, throughput 40
	// C: 0 K80, 8 V100, throughput 50
	// 4 undone, first: V100/C K80/A -5
}

// A bidder whose jobs use few GPUs gives its Demand: its value counts its
// Demand fastest GPUs only, and it trades no GPUs its jobs use for slow
// ones they cannot. Table 3's market with A running 4 one-GPU jobs: A keeps
// its V100s (its 4 jobs run at 5 on them, at 4 on the 40 K80s it sells
// them for without a Demand, as in ExampleMarket), and C buys
// from B instead, at the mean of their speedups, 5.625 K80s a V100, as
// many as its 20 K80s pay for.
func ExampleBidder_demand() {
	m, _ := trade.NewMarket([]topology.GPUType{"K80", "V100"}, []float64{60, 12}, &trade.Settings{Unit: 1})
	for _, u := range []struct {
		id     alloc.TenantID
		speed  float64
		demand float64
	}{{"A", 1.25, 4}, {"B", 5, 0}, {"C", 6.25, 0}} {
		_, _ = m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: u.id, Weight: 1}, Rates: map[topology.GPUType]float64{"K80": 1, "V100": u.speed}, Demand: u.demand}, 0)
	}
	trades, _ := m.Run(context.Background(), 1)
	fmt.Println(len(trades), "trades, first:", trades[0])
	for _, u := range []alloc.TenantID{"A", "B", "C"} {
		h, _ := m.Holdings(u)
		v, _ := m.Value(u)
		fmt.Printf("%s: %.4g K80, %.4g V100, throughput %.4g\n", u, h[0], h[1], v)
	}
	// Output:
	// 4 trades, first: V100/C K80/B 5.62
	// A: 20 K80, 4 V100, throughput 5
	// B: 40 K80, 0.4444 V100, throughput 42.22
	// C: 0 K80, 7.556 V100, throughput 47.22
}
