package trade_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
	"github.com/gpufair/gpufair/trade"
)

// tol is the absolute slack for holdings computed by a few divisions.
const tol = 1e-12

func rates(slow, fast float64) map[topology.GPUType]float64 {
	return map[topology.GPUType]float64{"slow": slow, "fast": fast}
}

func newMarket(t *testing.T, types []topology.GPUType, count []float64, s *trade.Settings, users ...trade.Bidder) *trade.Market {
	t.Helper()
	m, err := trade.NewMarket(types, count, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if _, err := m.Join(u, 0); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// Table 3: 60 K80s and 12 V100s; A (VAE, 1.25x), B (DCGAN, 5x) and C
// (ResNext, 6.25x) start with 20 K80s and 4 V100s each. C buys A's V100s at
// B's speedup, 5 K80s per V100, one V100 per trade: four trades.
func TestTable3(t *testing.T) {
	k80v100 := func(v float64) map[topology.GPUType]float64 { return map[topology.GPUType]float64{"k80": 1, "v100": v} }
	m := newMarket(t, []topology.GPUType{"k80", "v100"}, []float64{60, 12}, &trade.Settings{Unit: 1},
		trade.Bidder{Tenant: alloc.Tenant{ID: "A", Weight: 1}, Rates: k80v100(1.25)},
		trade.Bidder{Tenant: alloc.Tenant{ID: "B", Weight: 1}, Rates: k80v100(5)},
		trade.Bidder{Tenant: alloc.Tenant{ID: "C", Weight: 1}, Rates: k80v100(6.25)},
	)
	before := map[alloc.TenantID]float64{}
	for _, u := range []alloc.TenantID{"A", "B", "C"} {
		before[u], _ = m.Value(u)
	}
	if diff := cmp.Diff(map[alloc.TenantID]float64{"A": 25, "B": 40, "C": 45}, before); diff != "" {
		t.Errorf("fair-share throughput (-want +got):\n%s", diff)
	}
	trades, err := m.Run(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	one := trade.Trade{Quantum: 1, Fast: "v100", Slow: "k80", Buyer: "C", Seller: "A", FastGPUs: 1, SlowGPUs: 5, Rate: 5}
	if diff := cmp.Diff([]trade.Trade{one, one, one, one}, trades); diff != "" {
		t.Errorf("trades (-want +got):\n%s", diff)
	}
	want := map[alloc.TenantID][]float64{"A": {40, 0}, "B": {20, 4}, "C": {0, 8}}
	wantValue := map[alloc.TenantID]float64{"A": 40, "B": 40, "C": 50}
	for u, w := range want {
		h, _ := m.Holdings(u)
		if diff := cmp.Diff(w, h); diff != "" {
			t.Errorf("%s holdings [K80 V100] (-want +got):\n%s", u, diff)
		}
		if v, _ := m.Value(u); v != wantValue[u] {
			t.Errorf("%s throughput %v, want %v", u, v, wantValue[u])
		}
	}
	if got := trades[0].String(); got != "v100/C k80/A 5" {
		t.Errorf("Figure 9 row %q", got)
	}
}

// oef24 is OEF section 2.4's example: two types with one GPU each, speedups
// W = [[1,2],[1,3],[1,4]], equal tickets; u1 reports speedup r1.
func oef24(t *testing.T, r1 float64) *trade.Market {
	return newMarket(t, []topology.GPUType{"slow", "fast"}, []float64{1, 1}, nil,
		trade.Bidder{Tenant: alloc.Tenant{ID: "u1", Weight: 1}, Rates: rates(1, r1)},
		trade.Bidder{Tenant: alloc.Tenant{ID: "u2", Weight: 1}, Rates: rates(1, 3)},
		trade.Bidder{Tenant: alloc.Tenant{ID: "u3", Weight: 1}, Rates: rates(1, 4)},
	)
}

// OEF section 2.4, expression (1): u3 buys at u2's price 3, then u2 buys
// from u1 with no third bidder left, at the mean of their speedups, 2.5. The
// paper prints X rounded: [[1, .09], [0, .47], [0, .44]]; exactly
// [[1, 4/45], [0, 7/15], [0, 4/9]].
func TestOEFExpression1(t *testing.T) {
	m := oef24(t, 2)
	trades, err := m.Run(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(trades) != 2 || trades[0].Rate != 3 || trades[1].Rate != 2.5 {
		t.Errorf("trades %v, want rates 3 then 2.5", trades)
	}
	want := [][]float64{{1, 4. / 45}, {0, 7. / 15}, {0, 4. / 9}}
	if diff := cmp.Diff(want, m.Allocation().GPUs, cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("allocation (-want +got):\n%s", diff)
	}
	// Every user gains over its equal share (sharing incentive).
	for i, u := range []alloc.TenantID{"u1", "u2", "u3"} {
		v, _ := m.Value(u)
		fair := (1 + float64(i+2)) / 3
		if v <= fair {
			t.Errorf("%s throughput %v, not above its fair share %v", u, v, fair)
		}
	}
}

// OEF section 2.4: second-price trading is not strategy-proof. u1 raising
// its reported speedup from 2 to 2.8 raises the second-round price to 2.9
// and leaves it with more of the fast GPU: its true throughput rises from
// 1 + 2·4/45 to 1 + 2·(2/9 - 1/8.7) (the paper's 1.22).
func TestInflatedSpeedupGains(t *testing.T) {
	honest := oef24(t, 2)
	lying := oef24(t, 2.8)
	if _, err := honest.Run(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	trades, err := lying.Run(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := trades[1].Rate; math.Abs(got-2.9) > tol {
		t.Errorf("second-round price %v, want 2.9", got)
	}
	trueValue := func(m *trade.Market) float64 {
		h, _ := m.Holdings("u1")
		return h[0] + 2*h[1]
	}
	h, l := trueValue(honest), trueValue(lying)
	if math.Abs(h-(1+8./45)) > tol || math.Abs(l-(1+2*(2./9-1/8.7))) > tol {
		t.Errorf("u1's true throughput honest %v, lying %v", h, l)
	}
	if !(l > h) {
		t.Errorf("lying does not pay: %v <= %v", l, h)
	}
}

// Section 3.4: B claiming 6.5 (above C's 6.25) to win the trade does not
// pay in Table 3's market (ERRATA.md: the top bidder's lie there fails).
func TestTable3TopBidderLieDoesNotPay(t *testing.T) {
	k80v100 := func(v float64) map[topology.GPUType]float64 { return map[topology.GPUType]float64{"k80": 1, "v100": v} }
	run := func(b float64) float64 {
		m := newMarket(t, []topology.GPUType{"k80", "v100"}, []float64{60, 12}, nil,
			trade.Bidder{Tenant: alloc.Tenant{ID: "A", Weight: 1}, Rates: k80v100(1.25)},
			trade.Bidder{Tenant: alloc.Tenant{ID: "B", Weight: 1}, Rates: k80v100(b)},
			trade.Bidder{Tenant: alloc.Tenant{ID: "C", Weight: 1}, Rates: k80v100(6.25)},
		)
		if _, err := m.Run(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		h, _ := m.Holdings("B")
		return h[0] + 5*h[1] // B's true speedup is 5
	}
	if honest, lie := run(5), run(6.5); lie > honest+tol {
		t.Errorf("B gains by claiming 6.5: %v > %v", lie, honest)
	}
}

// Figure 9's negative rates: a user arriving undoes the trades in force,
// and trading starts again from the new fair shares.
func TestUndoOnArrivalAndDeparture(t *testing.T) {
	m := oef24(t, 2)
	made, _ := m.Run(context.Background(), 1)
	undone, err := m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: "u4", Weight: 1}, Rates: rates(1, 5)}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(undone) != len(made) {
		t.Fatalf("undid %d of %d trades", len(undone), len(made))
	}
	for i, u := range undone {
		w := made[len(made)-1-i]
		if u.Rate != -w.Rate || u.Buyer != w.Buyer || u.Seller != w.Seller || u.Quantum != 2 {
			t.Errorf("undo %v of %v", u, w)
		}
	}
	if diff := cmp.Diff([]alloc.TenantID{"u1", "u2", "u3", "u4"}, m.Bidders()); diff != "" {
		t.Errorf("Bidders() after arrival (-want +got):\n%s", diff)
	}
	for _, id := range []alloc.TenantID{"u1", "u2", "u3", "u4"} {
		h, _ := m.Holdings(id)
		if diff := cmp.Diff([]float64{0.25, 0.25}, h, cmpopts.EquateApprox(0, tol)); diff != "" {
			t.Errorf("%s after arrival (-want +got):\n%s", id, diff)
		}
	}
	if len(m.Open()) != 0 || len(m.Log()) != 2*len(made) {
		t.Errorf("open %d, log %d", len(m.Open()), len(m.Log()))
	}
	if _, err := m.Run(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	undone, err = m.Leave("u4", 4)
	if err != nil || len(undone) == 0 {
		t.Fatalf("Leave: %v undone, %v", len(undone), err)
	}
	h, _ := m.Holdings("u1")
	if diff := cmp.Diff([]float64{1. / 3, 1. / 3}, h, cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("u1 after departure (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]alloc.TenantID{"u1", "u2", "u3"}, m.Bidders()); diff != "" {
		t.Errorf("Bidders() after departure (-want +got):\n%s", diff)
	}
}

// Undo reverses every trade in force, newest first, at its own quantum
// with the rate negated, logs the reversals after the trades, and puts
// each bidder back at its Weight's share: of 60 K80s and 12 V100s, A and
// B (1 each) hold 15 and 3, C (2) holds 30 and 6. With nothing in force
// it undoes nothing.
func TestUndo(t *testing.T) {
	k80v100 := func(v float64) map[topology.GPUType]float64 { return map[topology.GPUType]float64{"k80": 1, "v100": v} }
	m := newMarket(t, []topology.GPUType{"k80", "v100"}, []float64{60, 12}, &trade.Settings{Unit: 1},
		trade.Bidder{Tenant: alloc.Tenant{ID: "A", Weight: 1}, Rates: k80v100(1.25)},
		trade.Bidder{Tenant: alloc.Tenant{ID: "B", Weight: 1}, Rates: k80v100(5)},
		trade.Bidder{Tenant: alloc.Tenant{ID: "C", Weight: 2}, Rates: k80v100(6.25)},
	)
	fair := map[alloc.TenantID][]float64{"A": {15, 3}, "B": {15, 3}, "C": {30, 6}}
	holdings := func() map[alloc.TenantID][]float64 {
		out := map[alloc.TenantID][]float64{}
		for _, id := range m.Bidders() {
			out[id], _ = m.Holdings(id)
		}
		return out
	}
	if diff := cmp.Diff(fair, holdings(), cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Fatalf("holdings before trading (-want +got):\n%s", diff)
	}
	made, err := m.Run(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(made) < 2 {
		t.Fatalf("%d trades; the test needs several", len(made))
	}
	if diff := cmp.Diff(fair, holdings(), cmpopts.EquateApprox(0, tol)); diff == "" {
		t.Fatalf("trades %v left the holdings at the fair shares", made)
	}
	undone, err := m.Undo(5)
	if err != nil {
		t.Fatal(err)
	}
	var want []trade.Trade
	for i := len(made) - 1; i >= 0; i-- {
		u := made[i]
		u.Quantum, u.Rate = 5, -u.Rate
		want = append(want, u)
	}
	if diff := cmp.Diff(want, undone); diff != "" {
		t.Errorf("Undo(5) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(append(append([]trade.Trade(nil), made...), want...), m.Log()); diff != "" {
		t.Errorf("Log() after Undo (-want +got):\n%s", diff)
	}
	if open := m.Open(); len(open) != 0 {
		t.Errorf("Open() = %v after Undo", open)
	}
	if diff := cmp.Diff(fair, holdings(), cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("holdings after Undo (-want +got):\n%s", diff)
	}
	if again, err := m.Undo(6); err != nil || len(again) != 0 {
		t.Errorf("Undo(6) with nothing in force = %v", again)
	}
	if got := len(m.Log()); got != 2*len(made) {
		t.Errorf("Log() has %d records after an empty Undo, want %d", got, 2*len(made))
	}
	if diff := cmp.Diff(fair, holdings(), cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("holdings after an empty Undo (-want +got):\n%s", diff)
	}
}

func TestBadInput(t *testing.T) {
	types := []topology.GPUType{"slow", "fast"}
	for _, tc := range []struct {
		name  string
		u     trade.Bidder
		want  error
		field string
	}{
		{"unknown type", trade.Bidder{Tenant: alloc.Tenant{ID: "x", Weight: 1}, Rates: map[topology.GPUType]float64{"slow": 1, "fast": 2, "tpu": 3}}, gpufair.ErrUnknownType, "Bidder.Rates"},
		{"missing type", trade.Bidder{Tenant: alloc.Tenant{ID: "x", Weight: 1}, Rates: map[topology.GPUType]float64{"slow": 1}}, gpufair.ErrUnknownType, "Bidder.Rates"},
		{"zero weight", trade.Bidder{Tenant: alloc.Tenant{ID: "x", Weight: 0}, Rates: rates(1, 2)}, gpufair.ErrValue, "Tenant.Weight"},
		{"NaN rate", trade.Bidder{Tenant: alloc.Tenant{ID: "x", Weight: 1}, Rates: rates(math.NaN(), 2)}, gpufair.ErrValue, "Bidder.Rates"},
		{"zero rate", trade.Bidder{Tenant: alloc.Tenant{ID: "x", Weight: 1}, Rates: rates(0, 2)}, gpufair.ErrValue, "Bidder.Rates"},
		// A subnormal rate made the speedup +Inf: a million trades at an
		// infinite price, each of nothing (found by FuzzMarket).
		{"rate spread", trade.Bidder{Tenant: alloc.Tenant{ID: "x", Weight: 1}, Rates: rates(1.8e-310, 6)}, gpufair.ErrValue, "Bidder.Rates"},
		// Rates of 1e308 made Value +Inf.
		{"rate overflow", trade.Bidder{Tenant: alloc.Tenant{ID: "x", Weight: 1}, Rates: rates(1e308, 1e308)}, gpufair.ErrTooLarge, "Bidder.Rates"},
		{"empty ID", trade.Bidder{Tenant: alloc.Tenant{Weight: 1}, Rates: rates(1, 2)}, gpufair.ErrValue, "Tenant.ID"},
		{"duplicate", trade.Bidder{Tenant: alloc.Tenant{ID: "a", Weight: 1}, Rates: rates(1, 2)}, gpufair.ErrDuplicate, "Tenant.ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMarket(t, types, []float64{1, 1}, nil, trade.Bidder{Tenant: alloc.Tenant{ID: "a", Weight: 1}, Rates: rates(1, 2)})
			_, err := m.Join(tc.u, 1)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Join() error = %v, want %v", err, tc.want)
			}
			var ie *gpufair.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %T is not an *gpufair.InputError", err)
			}
			if ie.Field != tc.field {
				t.Errorf("Field = %q, want %q", ie.Field, tc.field)
			}
		})
	}
	if _, err := trade.NewMarket(types, []float64{1, 0}, nil); !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("zero count: %v", err)
	}
	if _, err := trade.NewMarket(types, []float64{1, 1}, &trade.Settings{Unit: -1}); !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("negative unit: %v", err)
	}
	m := newMarket(t, types, []float64{1, 1}, nil)
	if _, err := m.Leave("nobody", 1); !errors.Is(err, gpufair.ErrUnknownID) {
		t.Errorf("Leave(unknown): %v", err)
	}
}

func TestMaxTrades(t *testing.T) {
	m := newMarket(t, []topology.GPUType{"k80", "v100"}, []float64{60, 12}, &trade.Settings{Unit: 1, MaxTrades: 2},
		trade.Bidder{Tenant: alloc.Tenant{ID: "A", Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 1.25}},
		trade.Bidder{Tenant: alloc.Tenant{ID: "C", Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 6.25}},
	)
	got, err := m.Run(context.Background(), 1)
	if !errors.Is(err, trade.ErrMaxTrades) || len(got) != 2 {
		t.Errorf("Run() = %d trades, %v; want 2 and ErrMaxTrades", len(got), err)
	}
}

// doneAfter is a context that is done (context.Canceled) from the n+1-th
// call of Err on, so that a test can stop Run between two given trades.
type doneAfter struct {
	context.Context
	n int
}

func (c *doneAfter) Err() error {
	if c.n == 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

// Run stops between trades once ctx is done; the trades made stand, and a
// later Run makes the rest, ending where one uninterrupted Run ends.
func TestRunCancelled(t *testing.T) {
	bidders := []trade.Bidder{
		{Tenant: alloc.Tenant{ID: "A", Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 1.25}},
		{Tenant: alloc.Tenant{ID: "C", Weight: 1}, Rates: map[topology.GPUType]float64{"k80": 1, "v100": 6.25}},
	}
	types, count, set := []topology.GPUType{"k80", "v100"}, []float64{60, 12}, &trade.Settings{Unit: 1}
	whole := newMarket(t, types, count, set, bidders...)
	want, err := whole.Run(context.Background(), 1)
	if err != nil || len(want) < 3 {
		t.Fatalf("Run() = %d trades, %v; want at least 3 to interrupt", len(want), err)
	}

	m := newMarket(t, types, count, set, bidders...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := m.Run(ctx, 1); !errors.Is(err, context.Canceled) || len(got) != 0 {
		t.Fatalf("Run(cancelled) = %d trades, %v; want none and context.Canceled", len(got), err)
	}
	// One check before the first trade, then one per trade: done after 2.
	first, err := m.Run(&doneAfter{Context: context.Background(), n: 3}, 1)
	if !errors.Is(err, context.Canceled) || len(first) != 2 {
		t.Fatalf("Run(done after 2 trades) = %d trades, %v; want 2 and context.Canceled", len(first), err)
	}
	rest, err := m.Run(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, append(first, rest...)); diff != "" {
		t.Errorf("interrupted trades mismatch (-want +got):\n%s", diff)
	}
	for _, id := range []alloc.TenantID{"A", "C"} {
		wh, _ := whole.Holdings(id)
		h, _ := m.Holdings(id)
		if diff := cmp.Diff(wh, h, cmpopts.EquateApprox(0, tol)); diff != "" {
			t.Errorf("%s's holdings mismatch (-want +got):\n%s", id, diff)
		}
	}
}

// Three types, one GPU of each per user: pairs are visited V100/K80, then
// V100/P100, then P100/K80. Worked by hand:
//   - V100/K80 (speedups A 2, B 4, C 8): C buys 1/4 V100 from A at B's 4;
//     then B, the best remaining bidder, buys 1/3 from A with no third
//     bidder, at (4+2)/2 = 3.
//   - V100/P100 (A 4/3, B 4/3, C 4): C buys from B, the last-ranked holder;
//     A's bid ties B's, so it is no second price: (4 + 4/3)/2 = 8/3, and C
//     pays its one P100 for 3/8 V100.
//   - P100/K80: only A holds K80s, and A ranks last: no trade.
func TestThreeTypes(t *testing.T) {
	r := func(k, p, v float64) map[topology.GPUType]float64 {
		return map[topology.GPUType]float64{"k80": k, "p100": p, "v100": v}
	}
	m := newMarket(t, []topology.GPUType{"k80", "p100", "v100"}, []float64{3, 3, 3}, nil,
		trade.Bidder{Tenant: alloc.Tenant{ID: "A", Weight: 1}, Rates: r(1, 1.5, 2)},
		trade.Bidder{Tenant: alloc.Tenant{ID: "B", Weight: 1}, Rates: r(1, 3, 4)},
		trade.Bidder{Tenant: alloc.Tenant{ID: "C", Weight: 1}, Rates: r(1, 2, 8)},
	)
	trades, err := m.Run(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []trade.Trade{
		{Quantum: 1, Fast: "v100", Slow: "k80", Buyer: "C", Seller: "A", FastGPUs: 0.25, SlowGPUs: 1, Rate: 4},
		{Quantum: 1, Fast: "v100", Slow: "k80", Buyer: "B", Seller: "A", FastGPUs: 1. / 3, SlowGPUs: 1, Rate: 3},
		{Quantum: 1, Fast: "v100", Slow: "p100", Buyer: "C", Seller: "B", FastGPUs: 3. / 8, SlowGPUs: 1, Rate: 8. / 3},
	}
	if diff := cmp.Diff(want, trades, cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("trades (-want +got):\n%s", diff)
	}
	wantHold := [][]float64{{3, 1, 5. / 12}, {0, 2, 23. / 24}, {0, 0, 13. / 8}}
	if diff := cmp.Diff(wantHold, m.Allocation().GPUs, cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("holdings [K80 P100 V100] (-want +got):\n%s", diff)
	}
}

// NewMarket refuses a positive Unit below MinUnit: Units of 5e-324, 1e-300
// and 1e-17 made Run take a million trades that rounding all but wiped
// out, and with 1e-17 a buyer paid K80s for V100s it never received.
func TestUnitFloor(t *testing.T) {
	types := []topology.GPUType{"slow", "fast"}
	for _, unit := range []float64{5e-324, 1e-300, 1e-17, trade.MinUnit / 2, -1, math.NaN(), math.Inf(1)} {
		_, err := trade.NewMarket(types, []float64{1, 1}, &trade.Settings{Unit: unit})
		var ie *gpufair.InputError
		if !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != "Settings.Unit" {
			t.Errorf("NewMarket(Unit %v) error = %v, want an *InputError on Settings.Unit wrapping ErrValue", unit, err)
		}
	}
	for _, unit := range []float64{0, trade.MinUnit, 1} {
		if _, err := trade.NewMarket(types, []float64{1, 1}, &trade.Settings{Unit: unit}); err != nil {
			t.Errorf("NewMarket(Unit %v) error = %v, want nil", unit, err)
		}
	}
}

// Holdings move by exactly what the trades record (to a relative 1e-9): a
// seller of weight 1e-12 holds 5e-9 of each type beside its buyer's 5000,
// so adding its GPUs to the buyer's rounded away part of them; such a
// trade is not made.
func TestTradesMoveWhatTheyRecord(t *testing.T) {
	types := []topology.GPUType{"slow", "fast"}
	bidders := []trade.Bidder{
		{Tenant: alloc.Tenant{ID: "buyer", Weight: 1}, Rates: rates(1, 4)},
		{Tenant: alloc.Tenant{ID: "seller", Weight: 1e-12}, Rates: rates(1, 2)},
	}
	m := newMarket(t, types, []float64{5000, 5000}, nil, bidders...)
	before := map[alloc.TenantID][]float64{}
	for _, u := range bidders {
		before[u.ID], _ = m.Holdings(u.ID)
	}
	made, err := m.Run(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	// Moves per bidder, [slow fast], as recorded.
	moves := map[alloc.TenantID][]float64{"buyer": {0, 0}, "seller": {0, 0}}
	scale := 0.0 // the GPUs the trades moved
	for _, tr := range made {
		moves[tr.Buyer][1] += tr.FastGPUs
		moves[tr.Seller][1] -= tr.FastGPUs
		moves[tr.Buyer][0] -= tr.SlowGPUs
		moves[tr.Seller][0] += tr.SlowGPUs
		scale += tr.FastGPUs + tr.SlowGPUs
	}
	for id, want := range moves {
		h, _ := m.Holdings(id)
		got := []float64{h[0] - before[id][0], h[1] - before[id][1]}
		if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9*scale)); diff != "" {
			t.Errorf("%s's holdings moved otherwise than trades %v record (-recorded +moved):\n%s", id, made, diff)
		}
	}
}

// Every method that takes a quantum refuses one below the latest given,
// with an *InputError on Quantum wrapping ErrOrder, and changes nothing:
// after Run(2), Join and UndoFor at quantum 0 were taken and logged, and
// Leave(1) after Run(5) too.
func TestQuantumOrder(t *testing.T) {
	types := []topology.GPUType{"slow", "fast"}
	for _, selective := range []bool{false, true} {
		t.Run(fmt.Sprintf("selective=%v", selective), func(t *testing.T) {
			m := newMarket(t, types, []float64{4, 4}, &trade.Settings{Selective: selective},
				trade.Bidder{Tenant: alloc.Tenant{ID: "a", Weight: 1}, Rates: rates(1, 4)},
				trade.Bidder{Tenant: alloc.Tenant{ID: "b", Weight: 1}, Rates: rates(1, 2)},
			)
			if made, err := m.Run(context.Background(), 5); err != nil || len(made) == 0 {
				t.Fatalf("Run(5) = %v, %v; the test needs trades", made, err)
			}
			before, _ := m.MarshalJSON()
			c := trade.Bidder{Tenant: alloc.Tenant{ID: "c", Weight: 1}, Rates: rates(1, 3)}
			for _, tc := range []struct {
				name string
				call func() error
			}{
				{"Run", func() error { _, err := m.Run(context.Background(), 4); return err }},
				{"Join", func() error { _, err := m.Join(c, 4); return err }},
				{"Leave", func() error { _, err := m.Leave("a", 4); return err }},
				{"Undo", func() error { _, err := m.Undo(4); return err }},
				{"UndoFor", func() error { _, err := m.UndoFor("a", 4); return err }},
				{"Exchange", func() error {
					return m.Exchange(trade.Trade{Fast: "fast", Slow: "slow", Buyer: "a", Seller: "b", FastGPUs: 0.1, SlowGPUs: 0.1}, 4)
				}},
			} {
				err := tc.call()
				var ie *gpufair.InputError
				if !errors.Is(err, gpufair.ErrOrder) || !errors.As(err, &ie) || ie.Field != "Quantum" {
					t.Errorf("%s at quantum 4 after 5: error = %v, want an *InputError on Quantum wrapping ErrOrder", tc.name, err)
				}
				if after, _ := m.MarshalJSON(); string(after) != string(before) {
					t.Errorf("%s at quantum 4 changed the market", tc.name)
				}
			}
			// A Join at 7 moves Last on: Run(6) is refused.
			if _, err := m.Join(c, 7); err != nil {
				t.Fatal(err)
			}
			if q, ok := m.Last(); q != 7 || !ok {
				t.Errorf("Last() = %d, %v after Join at 7, want 7, true", q, ok)
			}
			if _, err := m.Run(context.Background(), 6); !errors.Is(err, gpufair.ErrOrder) {
				t.Errorf("Run(6) after Join at 7: error = %v, want ErrOrder", err)
			}
			log := m.Log()
			for i := 1; i < len(log); i++ {
				if log[i].Quantum < log[i-1].Quantum {
					t.Errorf("log quanta decrease at %d: %v", i, log)
				}
			}
		})
	}
}
