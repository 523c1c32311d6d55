package trade_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
	"github.com/gpufair/gpufair/trade"
	"pgregory.net/rapid"
)

// relTol is the relative slack for throughput comparisons after many
// trades, each a few floating-point operations.
const relTol = 1e-9

func genTypes() *rapid.Generator[[]topology.GPUType] {
	return rapid.Custom(func(t *rapid.T) []topology.GPUType {
		n := rapid.IntRange(2, 4).Draw(t, "types")
		out := make([]topology.GPUType, n)
		for k := range out {
			out[k] = topology.GPUType(fmt.Sprintf("g%d", k))
		}
		return out
	})
}

func genUser(types []topology.GPUType, id string) *rapid.Generator[trade.Bidder] {
	return rapid.Custom(func(t *rapid.T) trade.Bidder {
		r := map[topology.GPUType]float64{}
		for _, ty := range types {
			// Quarter steps make ties between users likely.
			r[ty] = float64(rapid.IntRange(1, 40).Draw(t, "rate")) / 4
		}
		return trade.Bidder{Tenant: alloc.Tenant{ID: alloc.TenantID(id), Weight: float64(rapid.IntRange(1, 5).Draw(t, "tickets"))}, Rates: r}
	})
}

// fairValue is u's throughput on its tickets' share of every type.
func fairValue(u trade.Bidder, types []topology.GPUType, count []float64, totalTickets float64) float64 {
	var v float64
	for k, ty := range types {
		v += u.Rates[ty] * count[k] * u.Weight / totalTickets
	}
	return v
}

// checkMarket checks conservation, non-negative holdings and sharing
// incentive: no user below the throughput of its share before trading.
func checkMarket(t *rapid.T, m *trade.Market, users []trade.Bidder, types []topology.GPUType, count []float64) {
	var T float64
	for _, u := range users {
		T += u.Weight
	}
	sum := make([]float64, len(types))
	for _, u := range users {
		h, ok := m.Holdings(u.ID)
		if !ok {
			t.Fatalf("user %s missing", u.ID)
		}
		for k, x := range h {
			if x < 0 {
				t.Fatalf("%s holds %v of %s", u.ID, x, types[k])
			}
			sum[k] += x
		}
		v, _ := m.Value(u.ID)
		if f := fairValue(u, types, count, T); v < f*(1-relTol) {
			t.Fatalf("%s throughput %v below its fair share %v", u.ID, v, f)
		}
	}
	if len(users) == 0 {
		return
	}
	for k := range sum {
		if math.Abs(sum[k]-count[k]) > relTol*count[k] {
			t.Fatalf("%s: %v GPUs held of %v", types[k], sum[k], count[k])
		}
	}
}

// Random markets traded to exhaustion: every trade's price lies between the
// seller's and the buyer's speedups, GPUs are conserved, no holding is
// negative, no user ends below the throughput of its tickets' share of every
// type (sharing incentive), and a second run finds nothing to trade.
func TestTradingKeepsSharingIncentive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		types := genTypes().Draw(t, "types")
		count := make([]float64, len(types))
		for k := range count {
			count[k] = float64(rapid.IntRange(1, 64).Draw(t, "count"))
		}
		unit := float64(rapid.IntRange(0, 3).Draw(t, "unit"))
		m, err := trade.NewMarket(types, count, &trade.Settings{Unit: unit})
		if err != nil {
			t.Fatal(err)
		}
		n := rapid.IntRange(1, 8).Draw(t, "users")
		var users []trade.Bidder
		for i := range n {
			u := genUser(types, fmt.Sprintf("u%d", i)).Draw(t, "user")
			users = append(users, u)
			if _, err := m.Join(u, 0); err != nil {
				t.Fatal(err)
			}
		}
		trades, err := m.Run(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[alloc.TenantID]trade.Bidder{}
		for _, u := range users {
			byID[u.ID] = u
		}
		for _, tr := range trades {
			if !(tr.Rate > 0) || tr.FastGPUs <= 0 || tr.Buyer == tr.Seller {
				t.Fatalf("bad trade %+v", tr)
			}
			// Both sides gain or break even: the price lies between the
			// seller's speedup and the buyer's.
			speedup := func(id alloc.TenantID) float64 { return byID[id].Rates[tr.Fast] / byID[id].Rates[tr.Slow] }
			if s, b := speedup(tr.Seller), speedup(tr.Buyer); tr.Rate < s*(1-relTol) || tr.Rate > b*(1+relTol) {
				t.Fatalf("trade %+v at %v outside [seller's speedup %v, buyer's %v]", tr, tr.Rate, s, b)
			}
		}
		checkMarket(t, m, users, types, count)
		// Trading is exhausted: a second run finds nothing.
		if again, _ := m.Run(context.Background(), 1); len(again) != 0 {
			t.Fatalf("second run traded %v", again)
		}
	})
}

// A state machine of arrivals, departures and trading rounds, checked
// against a model that only knows who is present.
func TestMarketStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		types := genTypes().Draw(t, "types")
		count := make([]float64, len(types))
		for k := range count {
			count[k] = float64(rapid.IntRange(1, 32).Draw(t, "count"))
		}
		m, err := trade.NewMarket(types, count, nil)
		if err != nil {
			t.Fatal(err)
		}
		var present []trade.Bidder
		next, q := 0, 0
		t.Repeat(map[string]func(*rapid.T){
			"join": func(t *rapid.T) {
				u := genUser(types, fmt.Sprintf("u%d", next)).Draw(t, "user")
				next++
				open := len(m.Open())
				undone, err := m.Join(u, q)
				if err != nil {
					t.Fatal(err)
				}
				if len(undone) != open {
					t.Fatalf("undid %d of %d open trades", len(undone), open)
				}
				present = append(present, u)
			},
			"leave": func(t *rapid.T) {
				if len(present) == 0 {
					t.Skip("nobody to leave")
				}
				i := rapid.IntRange(0, len(present)-1).Draw(t, "who")
				if _, err := m.Leave(present[i].ID, q); err != nil {
					t.Fatal(err)
				}
				present = slices.Delete(present, i, i+1)
			},
			"run": func(t *rapid.T) {
				q++
				if _, err := m.Run(context.Background(), q); err != nil {
					t.Fatal(err)
				}
			},
			"": func(t *rapid.T) {
				checkMarket(t, m, present, types, count)
				if len(m.Allocation().Rows) != len(present) {
					t.Fatalf("%d rows for %d users", len(m.Allocation().Rows), len(present))
				}
			},
		})
	})
}
