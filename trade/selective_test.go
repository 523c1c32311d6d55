package trade_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
	"github.com/gpufair/gpufair/trade"
)

// selectiveMachine drives a market with Settings.Selective through
// arrivals, departures, trading rounds and rate changes (as a scheduler's
// profiles move), checking the properties a running scheduler relies on.
type selectiveMachine struct{ marketMachine }

// marketMachine is the state the market's rapid state machines share.
type marketMachine struct {
	types   []topology.GPUType
	count   []float64
	m       *trade.Market
	present map[alloc.TenantID]trade.Bidder
	next, q int
}

// ids returns the bidders present, in order.
func (s *marketMachine) ids() []alloc.TenantID {
	return slices.Sorted(maps.Keys(s.present))
}

// who draws a bidder present; an action that needs one does not apply to
// an empty market (rapid skips it and draws another).
func (s *marketMachine) who(t *rapid.T) alloc.TenantID {
	if len(s.present) == 0 {
		t.Skip("no bidder present")
	}
	return rapid.SampledFrom(s.ids()).Draw(t, "who")
}

// value is bidder u's throughput on holdings h at its own rates.
func (s *selectiveMachine) value(u trade.Bidder, h []float64) float64 {
	var v float64
	for k, t := range s.types {
		v += u.Rates[t] * h[k]
	}
	return v
}

// fair returns bidder id's share of every type among those present.
func (s *selectiveMachine) fair(id alloc.TenantID) []float64 {
	var W float64
	for _, u := range s.present {
		W += u.Weight
	}
	out := make([]float64, len(s.types))
	for k := range out {
		out[k] = s.count[k] * s.present[id].Weight / W
	}
	return out
}

func (s *selectiveMachine) Join(t *rapid.T) {
	u := genUser(s.types, fmt.Sprintf("u%d", s.next)).Draw(t, "user")
	s.next++
	if undone, err := s.m.Join(u, s.q); err != nil || len(undone) != 0 {
		t.Fatalf("Join: %d undone, %v; want none undone", len(undone), err)
	}
	s.present[u.ID] = u
}

// Run: no bidder's throughput at its own rates falls through a trade, and
// each trade leaves both sides no worse off at the price it was made at.
func (s *selectiveMachine) Run(t *rapid.T) {
	before := map[alloc.TenantID]float64{}
	for id, u := range s.present {
		h, _ := s.m.Holdings(id)
		before[id] = s.value(u, h)
	}
	s.q++
	made, err := s.m.Run(context.Background(), s.q)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range made {
		b, sl := s.present[tr.Buyer], s.present[tr.Seller]
		gainB := tr.FastGPUs*b.Rates[tr.Fast] - tr.SlowGPUs*b.Rates[tr.Slow]
		gainS := tr.SlowGPUs*sl.Rates[tr.Slow] - tr.FastGPUs*sl.Rates[tr.Fast]
		if gainB < -relTol*tr.SlowGPUs*b.Rates[tr.Slow] || gainS < -relTol*tr.FastGPUs*sl.Rates[tr.Fast] {
			t.Fatalf("trade %v: buyer gains %v, seller %v", tr, gainB, gainS)
		}
	}
	for id, u := range s.present {
		h, _ := s.m.Holdings(id)
		if v := s.value(u, h); v < before[id]*(1-relTol) {
			t.Fatalf("%s's throughput fell through trading: %v to %v", id, before[id], v)
		}
	}
}

// Leave: the trades the leaver made are undone, with any that spent what
// they brought, and nothing else; every remaining bidder then holds its
// share among those left plus what its open trades moved, so a bidder
// whose trades were all undone holds exactly its share again.
func (s *selectiveMachine) Leave(t *rapid.T) {
	id := s.who(t)
	open := s.m.Open()
	undone, err := s.m.Leave(id, s.q)
	if err != nil {
		t.Fatal(err)
	}
	delete(s.present, id)
	after := s.m.Open()
	for _, tr := range open {
		if (tr.Buyer == id || tr.Seller == id) && slices.Contains(after, tr) {
			t.Fatalf("trade %v of the leaver still open", tr)
		}
	}
	if len(open)-len(after) != len(undone) {
		t.Fatalf("%d trades open before, %d after, %d undone", len(open), len(after), len(undone))
	}
	s.checkReplay(t)
}

// Redo: a bidder's rates change (a new profile); its trades are undone
// alone.
func (s *selectiveMachine) Redo(t *rapid.T) {
	id := s.who(t)
	u := genUser(s.types, string(id)).Draw(t, "rates")
	u.Weight = s.present[id].Weight
	if _, err := s.m.UndoFor(id, s.q); err != nil {
		t.Fatal(err)
	}
	for _, tr := range s.m.Open() {
		if tr.Buyer == id || tr.Seller == id {
			t.Fatalf("trade %v still open after UndoFor(%s)", tr, id)
		}
	}
	if err := s.m.SetRates(id, u.Rates); err != nil {
		t.Fatal(err)
	}
	s.present[id] = u
	s.checkReplay(t)
}

// checkReplay: holdings are each bidder's share plus the open trades.
func (s *selectiveMachine) checkReplay(t *rapid.T) {
	want := map[alloc.TenantID][]float64{}
	for id := range s.present {
		want[id] = s.fair(id)
	}
	for _, tr := range s.m.Open() {
		f, sl := slices.Index(s.types, tr.Fast), slices.Index(s.types, tr.Slow)
		want[tr.Buyer][f] += tr.FastGPUs
		want[tr.Seller][f] -= tr.FastGPUs
		want[tr.Buyer][sl] -= tr.SlowGPUs
		want[tr.Seller][sl] += tr.SlowGPUs
	}
	for id, w := range want {
		h, _ := s.m.Holdings(id)
		for k := range w {
			if math.Abs(h[k]-w[k]) > 1e-9*s.count[k] {
				t.Fatalf("%s holds %v of %s; its share and open trades give %v", id, h[k], s.types[k], w[k])
			}
		}
	}
}

// Check: sharing incentive and conservation (checkMarket).
func (s *selectiveMachine) Check(t *rapid.T) {
	var users []trade.Bidder
	for _, id := range s.ids() {
		users = append(users, s.present[id])
	}
	checkMarket(t, s.m, users, s.types, s.count)
}

func TestSelectiveUndo(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := &selectiveMachine{marketMachine{types: genTypes().Draw(t, "types"), present: map[alloc.TenantID]trade.Bidder{}}}
		for range s.types {
			s.count = append(s.count, float64(rapid.IntRange(1, 32).Draw(t, "count")))
		}
		var err error
		unit := float64(rapid.IntRange(0, 2).Draw(t, "unit"))
		if s.m, err = trade.NewMarket(s.types, s.count, &trade.Settings{Selective: true, Unit: unit}); err != nil {
			t.Fatal(err)
		}
		t.Repeat(map[string]func(*rapid.T){"join": s.Join, "leave": s.Leave, "run": s.Run, "redo": s.Redo, "": s.Check})
	})
}

// Exchange refuses a trade naming an unknown bidder or type, and changes
// nothing.
func TestExchangeRefuses(t *testing.T) {
	types := []topology.GPUType{"k80", "v100"}
	m, err := trade.NewMarket(types, []float64{4, 2}, &trade.Settings{Selective: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []alloc.TenantID{"a", "b"} {
		if _, err := m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: id, Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 2}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	ok := trade.Trade{Fast: "v100", Slow: "k80", Buyer: "a", Seller: "b", FastGPUs: 0.5, SlowGPUs: 1}
	before, _ := m.MarshalJSON()
	for _, tc := range []struct {
		name  string
		edit  func(*trade.Trade)
		want  error
		field string
	}{
		{"unknown buyer", func(t *trade.Trade) { t.Buyer = "nobody" }, gpufair.ErrUnknownID, "Trade.Buyer"},
		{"unknown seller", func(t *trade.Trade) { t.Seller = "nobody" }, gpufair.ErrUnknownID, "Trade.Seller"},
		{"unknown fast type", func(t *trade.Trade) { t.Fast = "tpu" }, gpufair.ErrUnknownType, "Trade.Fast"},
		{"unknown slow type", func(t *trade.Trade) { t.Slow = "tpu" }, gpufair.ErrUnknownType, "Trade.Slow"},
		{"with itself", func(t *trade.Trade) { t.Seller = "a" }, gpufair.ErrDuplicate, "Trade.Seller"},
		{"types swapped", func(t *trade.Trade) { t.Fast, t.Slow = t.Slow, t.Fast }, gpufair.ErrValue, "Trade.Fast"},
		{"NaN amount", func(t *trade.Trade) { t.FastGPUs = math.NaN() }, gpufair.ErrValue, "Trade.FastGPUs"},
		// Bad slow amounts were reported on Trade.FastGPUs.
		{"NaN slow amount", func(t *trade.Trade) { t.SlowGPUs = math.NaN() }, gpufair.ErrValue, "Trade.SlowGPUs"},
		{"zero slow amount", func(t *trade.Trade) { t.SlowGPUs = 0 }, gpufair.ErrValue, "Trade.SlowGPUs"},
		{"negative slow amount", func(t *trade.Trade) { t.SlowGPUs = -1 }, gpufair.ErrValue, "Trade.SlowGPUs"},
		{"infinite slow amount", func(t *trade.Trade) { t.SlowGPUs = math.Inf(1) }, gpufair.ErrValue, "Trade.SlowGPUs"},
		{"more than held", func(t *trade.Trade) { t.FastGPUs = 2 }, gpufair.ErrValue, "Trade.FastGPUs"},
		// 1 k80 for 1e-320 v100 logged a rate of +Inf, which MarshalJSON refused.
		{"rate overflow", func(t *trade.Trade) { t.FastGPUs = 1e-320 }, gpufair.ErrValue, "Trade.FastGPUs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := ok
			tc.edit(&tr)
			err := m.Exchange(tr, 1)
			var ie *gpufair.InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("Exchange() = %v, want an *InputError on %s wrapping %v", err, tc.field, tc.want)
			}
			if after, _ := m.MarshalJSON(); string(after) != string(before) {
				t.Errorf("a refused trade changed the market")
			}
		})
	}
	if err := m.Exchange(ok, 1); err != nil {
		t.Fatal(err)
	}
	if h, _ := m.Holdings("a"); h[0] != 1 || h[1] != 1.5 {
		t.Errorf("a holds %v after buying 0.5 v100 for 1 k80, want [1 1.5]", h)
	}
	// A snapshot restores the same market.
	snap, _ := m.MarshalJSON()
	m2, _ := trade.NewMarket(types, []float64{4, 2}, &trade.Settings{Selective: true})
	if err := m2.UnmarshalJSON(snap); err != nil {
		t.Fatal(err)
	}
	if again, _ := m2.MarshalJSON(); string(again) != string(snap) {
		t.Errorf("restored market differs")
	}
	if err := m2.UnmarshalJSON([]byte(`{"types":["x"]}`)); !errors.Is(err, gpufair.ErrSnapshot) {
		t.Errorf("another market's state: %v, want ErrSnapshot", err)
	}
}

// A snapshot whose open trades name a bidder or type the market lacks is
// refused: it was taken, and undoing the trade indexed past the bidders or
// at type -1 and panicked.
func TestUnmarshalRefusesUnknownOpenTrade(t *testing.T) {
	types := []topology.GPUType{"k80", "v100"}
	m, _ := trade.NewMarket(types, []float64{4, 2}, &trade.Settings{Selective: true})
	for _, id := range []alloc.TenantID{"a", "b"} {
		if _, err := m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: id, Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 2}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Exchange(trade.Trade{Fast: "v100", Slow: "k80", Buyer: "a", Seller: "b", FastGPUs: 0.5, SlowGPUs: 1}, 1); err != nil {
		t.Fatal(err)
	}
	snap, _ := m.MarshalJSON()
	for _, edit := range [][2]string{{`"Fast":"v100"`, `"Fast":"tpu"`}, {`"Slow":"k80"`, `"Slow":"tpu"`}, {`"Buyer":"a"`, `"Buyer":"nobody"`}, {`"Seller":"b"`, `"Seller":"nobody"`}} {
		t.Run(edit[1], func(t *testing.T) {
			bad := strings.Replace(string(snap), edit[0], edit[1], 1)
			m2, _ := trade.NewMarket(types, []float64{4, 2}, &trade.Settings{Selective: true})
			err := m2.UnmarshalJSON([]byte(bad))
			var ie *gpufair.InputError
			if !errors.Is(err, gpufair.ErrSnapshot) || !errors.As(err, &ie) || ie.Field != "Snapshot" {
				t.Fatalf("UnmarshalJSON() = %v, want an *InputError on Snapshot wrapping ErrSnapshot", err)
			}
			if _, err := m2.UndoFor("a", 2); !errors.Is(err, gpufair.ErrUnknownID) {
				t.Errorf("the refused snapshot changed the market: UndoFor(a) = %v", err)
			}
		})
	}
}

// Bidder returns a bidder as it stands: its tenant and the rates known so
// far, which with Settings.Unprofiled leave out the types not yet
// profiled until SetRates gives them; an unknown ID is not found.
func TestBidder(t *testing.T) {
	m, err := trade.NewMarket([]topology.GPUType{"k80", "v100"}, []float64{4, 2}, &trade.Settings{Unprofiled: true})
	if err != nil {
		t.Fatal(err)
	}
	a := alloc.Tenant{ID: "a", Weight: 2}
	if _, err := m.Join(trade.Bidder{Tenant: a, Rates: map[topology.GPUType]float64{"k80": 1.5}}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: "b", Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 4}}, 0); err != nil {
		t.Fatal(err)
	}
	got, ok := m.Bidder("a")
	if diff := cmp.Diff(trade.Bidder{Tenant: a, Rates: map[topology.GPUType]float64{"k80": 1.5}}, got); !ok || diff != "" {
		t.Errorf("Bidder(a) before profiling on v100, found %v (-want +got):\n%s", ok, diff)
	}
	got, ok = m.Bidder("b")
	if diff := cmp.Diff(trade.Bidder{Tenant: alloc.Tenant{ID: "b", Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 4}}, got); !ok || diff != "" {
		t.Errorf("Bidder(b), found %v (-want +got):\n%s", ok, diff)
	}
	if err := m.SetRates("a", map[topology.GPUType]float64{"k80": 1.5, "v100": 3}); err != nil {
		t.Fatal(err)
	}
	got, ok = m.Bidder("a")
	if diff := cmp.Diff(trade.Bidder{Tenant: a, Rates: map[topology.GPUType]float64{"k80": 1.5, "v100": 3}}, got); !ok || diff != "" {
		t.Errorf("Bidder(a) after SetRates, found %v (-want +got):\n%s", ok, diff)
	}
	if got, ok := m.Bidder("nobody"); ok {
		t.Errorf("Bidder(nobody) = %v, true", got)
	}
}

// Selective joins and leaves keep holdings finite at extreme weights: three
// weights of 1e308 summed to +Inf and made every holding NaN, and a bidder of
// weight 1e20 leaving one of weight 1 divided by W − gone = 0.
func TestSelectiveExtremeWeights(t *testing.T) {
	types := []topology.GPUType{"slow", "fast"}
	for _, tc := range []struct {
		name    string
		weights []float64
		want    []float64 // holdings of each remaining bidder after "a" leaves
	}{
		{"1e308", []float64{1e308, 1e308, 1e308}, []float64{5, 5}},
		{"1e20 and 1", []float64{1e20, 1}, []float64{10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMarket(t, types, []float64{10, 10}, &trade.Settings{Selective: true})
			ids := []alloc.TenantID{"a", "b", "c"}[:len(tc.weights)]
			for i, id := range ids {
				if _, err := m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: id, Weight: tc.weights[i]}, Rates: rates(1, 2)}, 0); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := m.Leave("a", 1); err != nil {
				t.Fatal(err)
			}
			for i, id := range ids[1:] {
				h, _ := m.Holdings(id)
				for _, x := range h {
					if math.Abs(x-tc.want[i]) > tol {
						t.Errorf("%s holds %v, want %v of each type", id, h, tc.want[i])
					}
				}
			}
		})
	}
}
