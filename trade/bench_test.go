package trade_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
	"github.com/gpufair/gpufair/trade"
)

// benchMarket builds a market of n users over K80, P100 and V100 with
// speedups drawn from seed (1 on K80, 1 to 4 on P100, 1 to 7 on V100, the
// spread of Gandiva_fair Table 1).
func benchMarket(b *testing.B, n int, seed uint64) *trade.Market {
	b.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	m, err := trade.NewMarket([]topology.GPUType{"k80", "p100", "v100"}, []float64{640, 240, 120}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		p := 1 + 3*rng.Float64()
		u := trade.Bidder{Tenant: alloc.Tenant{ID: alloc.TenantID(fmt.Sprintf("u%04d", i)), Weight: 1 + float64(rng.IntN(4))},
			Rates: map[topology.GPUType]float64{"k80": 1, "p100": p, "v100": p + 3*rng.Float64()}}
		if _, err := m.Join(u, 0); err != nil {
			b.Fatal(err)
		}
	}
	return m
}

// BenchmarkTrade times trading to exhaustion from fair shares (undo, then
// run) for 100 and 1,000 users.
func BenchmarkTrade(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("users=%d", n), func(b *testing.B) {
			m := benchMarket(b, n, 1)
			trades, err := m.Run(context.Background(), 1)
			if err != nil || len(trades) == 0 {
				b.Fatalf("fixture: %d trades, %v", len(trades), err)
			}
			var count int
			for b.Loop() {
				_, _ = m.Undo(1)
				t, _ := m.Run(context.Background(), 1)
				count += len(t)
			}
			b.ReportMetric(float64(count)/float64(b.N), "trades/op")
		})
	}
}
