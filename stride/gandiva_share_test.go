package stride_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// shareWindow is the window, in quanta, over which each tenant's share of
// each GPU type converges to its tickets' share (docs/reproduction.md,
// Gandiva_fair): measured over quanta [shareWarmup, shareWarmup+shareWindow).
const (
	shareWarmup = 50
	shareWindow = 200
)

// shareTol is how far, in GPUs of the type, a tenant's mean GPUs of a type
// over the window may lie from its tickets' share of the type's GPUs.
// Placement by ticket load leaves servers' loads up to a job apart, and
// each server's stride is exact over its own jobs, so the shares are off by
// a fraction of a GPU (the largest error seen in 300 random cases was under
// 0.2).
const shareTol = 0.25

// Tenants with more single-GPU jobs than their share of every type, on
// GPU types of 2 to 3 four-GPU servers: over the window each tenant's GPUs
// of each type average its tickets' share of the type, within shareTol.
func TestGandivaFairShareConverges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c topology.Cluster
		var types []topology.GPUType
		count := map[topology.GPUType]int{}
		for k := range rapid.IntRange(1, 2).Draw(t, "types") {
			typ := topology.GPUType(fmt.Sprint("T", k))
			types = append(types, typ)
			for s := range rapid.IntRange(2, 3).Draw(t, "servers") {
				c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("%s-%d", typ, s), Type: typ, GPUs: 4})
				count[typ] += 4
			}
		}
		total := 0
		for _, n := range count {
			total += n
		}
		tickets := map[alloc.TenantID]float64{}
		var T float64
		for i := range rapid.IntRange(2, 4).Draw(t, "tenants") {
			w := float64(rapid.IntRange(1, 3).Draw(t, "tickets"))
			tickets[alloc.TenantID(fmt.Sprint("u", i))] = w
			T += w
		}
		s, err := stride.NewGandivaFair(c, types, &stride.GandivaSettings{Tickets: func(id alloc.TenantID) float64 { return tickets[id] }})
		if err != nil {
			t.Fatal(err)
		}
		var evs []round.Event
		for u := range tickets {
			for i := range 2 * total {
				evs = append(evs, round.Arrive(0, alloc.Job{ID: alloc.JobID(fmt.Sprintf("%s-%03d", u, i)), Owner: u, Gang: 1, Weight: 1, Rates: ones(len(types))}, 0))
			}
		}
		if err := s.Apply(evs...); err != nil {
			t.Fatal(err)
		}
		got := map[alloc.TenantID]map[topology.GPUType]float64{}
		for u := range tickets {
			got[u] = map[topology.GPUType]float64{}
		}
		for q := range shareWarmup + shareWindow {
			d, err := s.Decide(context.Background(), float64(q)*stride.DefaultQuantum)
			if err != nil {
				t.Fatal(err)
			}
			if q < shareWarmup {
				continue
			}
			for _, p := range d.Placements {
				j, _ := s.Ledger().Job(p.Jobs[0])
				got[j.Owner][p.Type] += float64(len(p.GPUs)) / shareWindow
			}
		}
		for u, w := range tickets {
			for _, typ := range types {
				want := float64(count[typ]) * w / T
				if d := math.Abs(got[u][typ] - want); d > shareTol {
					t.Fatalf("%s has %.3f GPUs of %s on average, its tickets' share is %.3f", u, got[u][typ], typ, want)
				}
			}
		}
	})
}

func ones(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// Profiled rates stay finite: a profile of 1e-320 s, progress of 1e308 units
// in a millisecond, and the mean of two jobs' rates of 1e308 each gave a rate
// of +Inf, and every Snapshot after failed on it.
func TestGandivaFairRatesStayFinite(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "a", Type: "k80", GPUs: 2}, {Name: "b", Type: "v100", GPUs: 2}}}
	g, err := stride.NewGandivaFair(c, []topology.GPUType{"k80", "v100"}, &stride.GandivaSettings{Quantum: 1e-3, Trading: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []alloc.Job{
		{ID: "x", Owner: "u", Gang: 1, Weight: 1, Rates: []float64{1, 2}},
		{ID: "y", Owner: "u", Gang: 1, Weight: 1, Rates: []float64{1, 2}},
		{ID: "z", Gang: 1, Weight: 1, Rates: []float64{1, 2}},
	} {
		if err := g.Apply(round.Arrive(0, j, 0)); err != nil {
			t.Fatal(err)
		}
	}
	var ie *gpufair.InputError
	if err := g.Profile("x", "k80", 1e-320); !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != "Profile.Seconds" {
		t.Errorf("Profile(1e-320 s) = %v, want an *InputError on Profile.Seconds wrapping gpufair.ErrValue", err)
	}
	for _, id := range []alloc.JobID{"x", "y"} {
		if err := g.Profile(id, "k80", 1e-308); err != nil {
			t.Fatal(err)
		}
	}
	now := 0.0
	for q := range 4 {
		now += 1e-3
		if _, err := g.Decide(context.Background(), now); err != nil {
			t.Fatal(err)
		}
		if q == 1 {
			if err := g.Apply(round.Progress(now, "z", 1e308)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, u := range []alloc.TenantID{"u", "z"} {
		for k, r := range g.Rates(u) {
			if math.IsInf(r, 0) || math.IsNaN(r) {
				t.Errorf("tenant %s's rate on type %d is %v", u, k, r)
			}
		}
	}
	if _, err := g.Snapshot(); err != nil {
		t.Errorf("Snapshot: %v", err)
	}
}

// A profile the market refuses is no bid: a rate 1e14 times another of the
// tenant's is beyond alloc.MaxRateSpread, so trade.Market.SetRates refuses
// it, and the tenant's trades in force stand on its earlier rates. They were
// undone first, then made again on those rates, before the refusal was
// heeded.
func TestGandivaFairRefusedProfileKeepsTrades(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "k80-0", Type: "k80", GPUs: 4}, {Name: "k80-1", Type: "k80", GPUs: 4},
		{Name: "v100-0", Type: "v100", GPUs: 4},
	}}
	g, err := stride.NewGandivaFair(c, []topology.GPUType{"k80", "v100"}, &stride.GandivaSettings{Trading: true, Migrations: 4})
	if err != nil {
		t.Fatal(err)
	}
	speed := map[alloc.TenantID][]float64{"A": {1, 1.25}, "C": {1, 6.25}}
	for i := range 8 {
		for _, u := range []alloc.TenantID{"A", "C"} {
			j := alloc.Job{ID: alloc.JobID(fmt.Sprintf("%s%d", u, i)), Owner: u, Gang: 1, Weight: 1, Rates: []float64{1, 1}}
			if err := g.Apply(round.Arrive(0, j, 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	done := map[alloc.JobID]float64{}
	decide := func(q int) {
		d, err := g.Decide(context.Background(), float64(q)*stride.DefaultQuantum)
		if err != nil {
			t.Fatal(err)
		}
		var progress []round.Event
		for _, p := range d.Placements {
			k := slices.Index([]topology.GPUType{"k80", "v100"}, p.Type)
			done[p.Jobs[0]] += stride.DefaultQuantum * speed[alloc.TenantID(p.Jobs[0][:1])][k]
			progress = append(progress, round.Progress(d.End, p.Jobs[0], done[p.Jobs[0]]))
		}
		if err := g.Apply(progress...); err != nil {
			t.Fatal(err)
		}
	}
	for q := range 30 {
		decide(q)
	}
	log, held := g.Trades(), map[alloc.TenantID][]float64{}
	if len(log) == 0 {
		t.Fatal("no trade in 30 quanta")
	}
	for _, u := range []alloc.TenantID{"A", "C"} {
		held[u], _ = g.Holdings(u)
	}
	for i := range 8 {
		if err := g.Profile(alloc.JobID(fmt.Sprintf("A%d", i)), "k80", 1e-14); err != nil {
			t.Fatal(err)
		}
	}
	if r := g.Rates("A"); !alloc.BelowRateSpread(r[1], r[0]) {
		t.Fatalf("A's profiled rates %v are within alloc.MaxRateSpread: the test needs them beyond it", r)
	}
	decide(30)
	if diff := cmp.Diff(log, g.Trades()); diff != "" {
		t.Errorf("trades after a refused profile (-before +after):\n%s", diff)
	}
	for _, u := range []alloc.TenantID{"A", "C"} {
		if h, _ := g.Holdings(u); !slices.Equal(h, held[u]) {
			t.Errorf("%s holds %v after a refused profile, %v before", u, h, held[u])
		}
	}
}

// A job whose GPUs fail runs again at the next quantum: on the healthy
// servers of its type where they can hold its gang, on another type it can
// run on where they cannot. Before failover it stayed on its failed
// servers while the GPUs it could use idled.
func TestGandivaFairFailover(t *testing.T) {
	types := []topology.GPUType{"k80", "v100"}
	for _, tc := range []struct {
		name   string
		v100s  int // servers of 4 V100s
		fail   int // V100 slots failed on the job's server
		gang   int
		wantOn topology.GPUType
	}{
		{"gang on one server, its type full elsewhere", 2, 1, 4, "v100"},
		{"gang on one server, its type short", 1, 1, 4, "k80"},
		{"one GPU, its server gone", 2, 4, 1, "v100"},
		{"one GPU, its type gone", 1, 4, 1, "k80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := topology.Cluster{Servers: []topology.Server{{Name: "k80-0", Type: "k80", GPUs: 4}}}
			for s := range tc.v100s {
				c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprint("v100-", s), Type: "v100", GPUs: 4})
			}
			g, err := stride.NewGandivaFair(c, types, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Apply(round.Arrive(0, alloc.Job{ID: "x", Owner: "t", Gang: tc.gang, Weight: 1, Rates: []float64{1, 4}}, 0)); err != nil {
				t.Fatal(err)
			}
			d, err := g.Decide(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Placements) != 1 || d.Placements[0].Type != "v100" {
				t.Fatalf("first decision %+v, want x on v100", d.Placements)
			}
			server := d.Placements[0].GPUs[0].Server
			for slot := range tc.fail {
				if err := g.Apply(round.Fail(30, topology.GPU{Server: server, Slot: slot})); err != nil {
					t.Fatal(err)
				}
			}
			d, err = g.Decide(context.Background(), stride.DefaultQuantum)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Placements) != 1 || d.Placements[0].Type != tc.wantOn {
				t.Fatalf("after the failure %+v, want x on %s", d.Placements, tc.wantOn)
			}
			for _, gpu := range d.Placements[0].GPUs {
				if g.Ledger().Failed(gpu) {
					t.Fatalf("x placed on failed GPU %v", gpu)
				}
			}
		})
	}
}
