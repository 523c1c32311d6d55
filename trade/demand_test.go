package trade_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
	"github.com/gpufair/gpufair/trade"
)

// cappedValue is the model of Market.Value: the most throughput on at most
// d GPUs of holding h (d = 0: all of them), the bidder's fastest types
// first.
func cappedValue(rates map[topology.GPUType]float64, types []topology.GPUType, h []float64, d float64) float64 {
	idx := make([]int, len(types))
	for k := range idx {
		idx[k] = k
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(rates[types[b]], rates[types[a]]) })
	left := math.Inf(1)
	if d > 0 {
		left = d
	}
	var v float64
	for _, k := range idx {
		x := min(h[k], left)
		v += rates[types[k]] * x
		left -= x
	}
	return v
}

// A small tenant's cluster (Gandiva_fair section 3.4 at a third of Table 3's
// size): 16 K80s and 8 V100s; A (1.25x) runs 4 one-GPU jobs, B (5x) and C
// (6.25x) 40 each. Valued by all its GPUs, A sells its whole V100 share
// and ends with 15.7 K80s and no V100: 4 work/s on the 4 GPUs its jobs
// use, below the 4.67 of its share (2.67 V100s and 1.33 K80s). With A's
// Demand, A keeps its share, and C buys from B instead, at the mean of
// their speedups, as B and C alone would trade.
func TestDemandKeepsSmallBidder(t *testing.T) {
	types := []topology.GPUType{"k80", "v100"}
	count := []float64{16, 8}
	k80v100 := func(v float64) map[topology.GPUType]float64 { return map[topology.GPUType]float64{"k80": 1, "v100": v} }
	bidders := func(demandA float64) []trade.Bidder {
		return []trade.Bidder{
			{Tenant: alloc.Tenant{ID: "A", Weight: 1}, Rates: k80v100(1.25), Demand: demandA},
			{Tenant: alloc.Tenant{ID: "B", Weight: 1}, Rates: k80v100(5), Demand: 40},
			{Tenant: alloc.Tenant{ID: "C", Weight: 1}, Rates: k80v100(6.25), Demand: 40},
		}
	}
	share := []float64{16.0 / 3, 8.0 / 3}
	for _, tc := range []struct {
		name       string
		demandA    float64
		wantTrades []trade.Trade
		wantA      []float64 // A's holdings [K80 V100] after trading
	}{{
		// No limit: the behaviour before Demand, unchanged. C buys at
		// B's speedup until its K80s run out, then B at the mean of its
		// speedup and A's.
		name: "no limit", demandA: 0,
		wantTrades: []trade.Trade{
			{Quantum: 1, Fast: "v100", Slow: "k80", Buyer: "C", Seller: "A", FastGPUs: 16.0 / 15, SlowGPUs: 16.0 / 3, Rate: 5},
			{Quantum: 1, Fast: "v100", Slow: "k80", Buyer: "B", Seller: "A", FastGPUs: 8.0/3 - 16.0/15, SlowGPUs: (8.0/3 - 16.0/15) * 3.125, Rate: 3.125},
		},
		wantA: []float64{16.0/3 + 16.0/3 + (8.0/3-16.0/15)*3.125, 0},
	}, {
		// Selling a V100 for K80s A cannot use costs it 1.25 − 1 per
		// V100: it sells none, and is passed over.
		name: "A demands 4", demandA: 4,
		wantTrades: []trade.Trade{
			{Quantum: 1, Fast: "v100", Slow: "k80", Buyer: "C", Seller: "B", FastGPUs: 16.0 / 3 / 5.625, SlowGPUs: 16.0 / 3, Rate: 5.625},
		},
		wantA: share,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMarket(t, types, count, nil, bidders(tc.demandA)...)
			before := map[alloc.TenantID]float64{}
			for _, id := range m.Bidders() {
				before[id], _ = m.Value(id)
			}
			got, err := m.Run(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(tc.wantTrades, got, cmpopts.EquateApprox(0, tol)); diff != "" {
				t.Errorf("trades mismatch (-want +got):\n%s", diff)
			}
			if h, _ := m.Holdings("A"); !gocmp.Equal(tc.wantA, h, cmpopts.EquateApprox(0, tol)) {
				t.Errorf("A holds %v, want %v", h, tc.wantA)
			}
			for _, id := range m.Bidders() {
				if v, _ := m.Value(id); v < before[id]*(1-relTol) {
					t.Errorf("%s's value fell through trading: %v to %v", id, before[id], v)
				}
			}
			// A's value on 4 GPUs: 4 K80s without a limit, its share's
			// 2.67 V100s and 1.33 K80s with one.
			hA, _ := m.Holdings("A")
			wantValue := map[float64]float64{0: 4, 4: 8.0/3*1.25 + 4 - 8.0/3}[tc.demandA]
			if v := cappedValue(k80v100(1.25), types, hA, 4); math.Abs(v-wantValue) > tol {
				t.Errorf("A's throughput on its 4 jobs: %v, want %v", v, wantValue)
			}
		})
	}
}

// SetDemand undoes the trades of a bidder its new Demand leaves below the
// value of its share, and only then: A, having sold its V100s without a
// limit, is below its share once it declares 4 GPUs; a Demand of 100,
// which never binds, leaves the trades in force.
func TestSetDemandUndoes(t *testing.T) {
	types := []topology.GPUType{"k80", "v100"}
	m := newMarket(t, types, []float64{16, 8}, &trade.Settings{Selective: true},
		trade.Bidder{Tenant: alloc.Tenant{ID: "A", Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 1.25}},
		trade.Bidder{Tenant: alloc.Tenant{ID: "C", Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 6.25}},
	)
	made, err := m.Run(context.Background(), 1)
	if err != nil || len(made) == 0 {
		t.Fatalf("Run() = %v, %v; want A to sell V100s", made, err)
	}
	if undone, err := m.SetDemand("A", 100, 2); err != nil || len(undone) != 0 {
		t.Fatalf("SetDemand(A, 100) = %v, %v; want nothing undone", undone, err)
	}
	undone, err := m.SetDemand("A", 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(undone) != len(made) || len(m.Open()) != 0 {
		t.Errorf("SetDemand(A, 4) undid %d of %d trades, %d still open", len(undone), len(made), len(m.Open()))
	}
	if h, _ := m.Holdings("A"); !gocmp.Equal([]float64{8, 4}, h, cmpopts.EquateApprox(0, tol)) {
		t.Errorf("A holds %v after its trades were undone, want its share [8 4]", h)
	}
	if u, _ := m.Bidder("A"); u.Demand != 4 {
		t.Errorf("Bidder(A).Demand = %v, want 4", u.Demand)
	}
	// A keeps its share: trading again at Demand 4 sells nothing of A's.
	if again, _ := m.Run(context.Background(), 4); len(again) != 0 {
		t.Errorf("A traded again at Demand 4: %v", again)
	}
}

// A negative, NaN or infinite Demand is refused, naming the bidder and
// field, by Join and SetDemand alike, and changes nothing.
func TestDemandRefused(t *testing.T) {
	types := []topology.GPUType{"slow", "fast"}
	for _, d := range []float64{-1, math.NaN(), math.Inf(1), math.Inf(-1)} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			m := newMarket(t, types, []float64{4, 4}, nil, trade.Bidder{Tenant: alloc.Tenant{ID: "a", Weight: 1}, Rates: rates(1, 2)})
			before, _ := m.MarshalJSON()
			_, errJoin := m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: "b", Weight: 1}, Rates: rates(1, 3), Demand: d}, 1)
			_, errSet := m.SetDemand("a", d, 1)
			for name, err := range map[string]error{"Join": errJoin, "SetDemand": errSet} {
				var ie *gpufair.InputError
				if !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != "Bidder.Demand" || ie.ID == "" {
					t.Errorf("%s(Demand %v) = %v, want an *InputError on Bidder.Demand naming the bidder, wrapping ErrValue", name, d, err)
				}
			}
			if after, _ := m.MarshalJSON(); string(after) != string(before) {
				t.Errorf("a refused Demand changed the market")
			}
		})
	}
	m := newMarket(t, types, []float64{4, 4}, nil)
	if _, err := m.SetDemand("nobody", 1, 0); !errors.Is(err, gpufair.ErrUnknownID) {
		t.Errorf("SetDemand(nobody) = %v, want ErrUnknownID", err)
	}
}

func genDemand(types []topology.GPUType, count []float64) *rapid.Generator[float64] {
	return rapid.Custom(func(t *rapid.T) float64 {
		var n float64
		for _, c := range count {
			n += c
		}
		// 0 (no limit) a third of the time; else from one GPU to more
		// than the market holds, in halves.
		if rapid.IntRange(0, 2).Draw(t, "limited") == 0 {
			return 0
		}
		return float64(rapid.IntRange(1, int(2*n)).Draw(t, "demand")) / 2
	})
}

// demandMachine drives a market of bidders with Demands through arrivals,
// departures, trading rounds and new Demands, with or without
// Settings.Selective, checking that no trade lowers either side's value and
// that no bidder is below the value of its share.
type demandMachine struct{ marketMachine }

func (s *demandMachine) value(id alloc.TenantID, h []float64) float64 {
	u := s.present[id]
	return cappedValue(u.Rates, s.types, h, u.Demand)
}

func (s *demandMachine) Join(t *rapid.T) {
	u := genUser(s.types, fmt.Sprintf("u%d", s.next)).Draw(t, "user")
	u.Demand = genDemand(s.types, s.count).Draw(t, "demand")
	s.next++
	if _, err := s.m.Join(u, s.q); err != nil {
		t.Fatal(err)
	}
	s.present[u.ID] = u
}

func (s *demandMachine) Leave(t *rapid.T) {
	id := s.who(t)
	if _, err := s.m.Leave(id, s.q); err != nil {
		t.Fatal(err)
	}
	delete(s.present, id)
}

func (s *demandMachine) SetDemand(t *rapid.T) {
	id := s.who(t)
	u := s.present[id]
	u.Demand = genDemand(s.types, s.count).Draw(t, "demand")
	if _, err := s.m.SetDemand(id, u.Demand, s.q); err != nil {
		t.Fatal(err)
	}
	s.present[id] = u
}

// Run: replayed one by one on a copy of the market, no trade lowers the
// buyer's or the seller's value, and the buyer holds no more GPUs of the
// fast type than its Demand leaves room for after its faster types.
func (s *demandMachine) Run(t *rapid.T) {
	snap, err := s.m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	twin, _ := trade.NewMarket(s.types, s.count, nil)
	if err := twin.UnmarshalJSON(snap); err != nil {
		t.Fatal(err)
	}
	s.q++
	made, err := s.m.Run(context.Background(), s.q)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range made {
		vb, _ := twin.Holdings(tr.Buyer)
		vs, _ := twin.Holdings(tr.Seller)
		b0, s0 := s.value(tr.Buyer, vb), s.value(tr.Seller, vs)
		if err := twin.Exchange(tr, s.q); err != nil {
			t.Fatalf("replaying %v: %v", tr, err)
		}
		hb, _ := twin.Holdings(tr.Buyer)
		hs, _ := twin.Holdings(tr.Seller)
		if b1, s1 := s.value(tr.Buyer, hb), s.value(tr.Seller, hs); b1 < b0-relTol*max(1, b0) || s1 < s0-relTol*max(1, s0) {
			t.Fatalf("trade %v: buyer's value %v to %v, seller's %v to %v", tr, b0, b1, s0, s1)
		}
	}
	// Trading is exhausted.
	if again, _ := s.m.Run(context.Background(), s.q); len(again) != 0 {
		t.Fatalf("second run traded %v", again)
	}
}

// Check: Value is the model's capped value, GPUs are conserved, and no
// bidder is below the value of its share.
func (s *demandMachine) Check(t *rapid.T) {
	var W float64
	for _, u := range s.present {
		W += u.Weight
	}
	sum := make([]float64, len(s.types))
	for _, id := range s.ids() {
		u := s.present[id]
		h, _ := s.m.Holdings(id)
		for k, x := range h {
			if x < 0 {
				t.Fatalf("%s holds %v of %s", id, x, s.types[k])
			}
			sum[k] += x
		}
		v, _ := s.m.Value(id)
		if want := s.value(id, h); math.Abs(v-want) > relTol*max(1, want) {
			t.Fatalf("Value(%s) = %v, want %v", id, v, want)
		}
		share := make([]float64, len(s.types))
		for k := range share {
			share[k] = s.count[k] * u.Weight / W
		}
		if f := s.value(id, share); v < f-relTol*max(1, f) {
			t.Fatalf("%s (Demand %v) has value %v on %v, below its share's %v", id, u.Demand, v, h, f)
		}
	}
	for k := range sum {
		if len(s.present) > 0 && math.Abs(sum[k]-s.count[k]) > relTol*s.count[k] {
			t.Fatalf("%s: %v GPUs held of %v", s.types[k], sum[k], s.count[k])
		}
	}
}

func TestDemandKeepsValue(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := &demandMachine{marketMachine{types: genTypes().Draw(t, "types"), present: map[alloc.TenantID]trade.Bidder{}}}
		for range s.types {
			s.count = append(s.count, float64(rapid.IntRange(1, 32).Draw(t, "count")))
		}
		set := &trade.Settings{
			Selective: rapid.Bool().Draw(t, "selective"),
			Unit:      float64(rapid.IntRange(0, 2).Draw(t, "unit")),
		}
		var err error
		if s.m, err = trade.NewMarket(s.types, s.count, set); err != nil {
			t.Fatal(err)
		}
		t.Repeat(map[string]func(*rapid.T){"join": s.Join, "leave": s.Leave, "run": s.Run, "demand": s.SetDemand, "": s.Check})
	})
}
