package auction

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

var t0 = time.Date(2020, 2, 25, 0, 0, 0, 0, time.UTC)

// testAgent is a one-job app: rho by equation 1 with elapsed time from its
// arrival, or a misbehaving agent.
type testAgent struct {
	job   ftf.SingleJob
	start time.Time
	bad   string // "": honest; "error", "empty", "nan": how it misbehaves
}

func (g testAgent) rhoAt(now time.Time, p ftf.Placement) (float64, error) {
	j := g.job
	j.Elapsed = now.Sub(g.start).Seconds()
	return j.Rho(p)
}

func (g testAgent) Bid(ctx context.Context, now time.Time, o ftf.Offer, held []int) (ftf.BidTable, error) {
	switch g.bad {
	case "error":
		return ftf.BidTable{}, ErrNoBid
	case "empty":
		return ftf.BidTable{RhoNone: math.Inf(1)}, nil
	case "nan":
		return ftf.BidTable{RhoNone: 1, Rows: []ftf.Row{{Counts: make([]int, len(o.Free)), Rho: math.NaN()}}}, nil
	}
	return RhoAgent{RhoAt: g.rhoAt, Table: &ftf.TableSettings{MaxGPUs: g.job.DemandMax, PerShape: 2, MaxRows: 16}}.Bid(ctx, now, o, held)
}

func (g testAgent) Rho(ctx context.Context, now time.Time, c topology.Cluster, held []int) (float64, error) {
	if g.bad != "" {
		return 0, ErrNoBid
	}
	return RhoAgent{RhoAt: g.rhoAt}.Rho(ctx, now, c, held)
}

func genCluster(t *rapid.T) topology.Cluster {
	var c topology.Cluster
	for s := rapid.IntRange(1, 4).Draw(t, "servers"); s > 0; s-- {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprint("m", s), Rack: fmt.Sprint("r", s%2), Type: "v100", GPUs: rapid.IntRange(1, 4).Draw(t, "gpus")})
	}
	return c
}

func genJob(t *rapid.T, gpus, apps int) ftf.SingleJob {
	iters := float64(rapid.IntRange(60, 7200).Draw(t, "iters"))
	return ftf.SingleJob{ItersLeft: iters, ItersTotal: iters, IterTime: 1, DemandMax: rapid.IntRange(1, 4).Draw(t, "demand"),
		ClusterGPUs: gpus, Contention: float64(apps), Slowdown: topology.Slowdown{1, 1 + rapid.Float64Range(0, 1).Draw(t, "rack"), 2.5}}
}

// arbMachine drives an Arbiter with arrivals, departures, failures,
// repairs and rounds, checking each round and the leases after every step.
type arbMachine struct {
	arb    *Arbiter
	c      topology.Cluster
	lease  time.Duration
	filter float64
	now    time.Time
	apps   []string
	next   int
	failed map[topology.GPU]bool
}

func (m *arbMachine) join(t *rapid.T) {
	id := fmt.Sprintf("app%02d", m.next)
	m.next++
	bad := rapid.SampledFrom([]string{"", "", "", "error", "empty", "nan"}).Draw(t, "bad")
	ag := testAgent{job: genJob(t, len(m.c.AllGPUs()), 4), start: m.now, bad: bad}
	if err := m.arb.Join(m.now, id, ag); err != nil {
		t.Fatal(err)
	}
	m.apps = append(m.apps, id)
}

func (m *arbMachine) leave(t *rapid.T) {
	if len(m.apps) == 0 {
		t.Skip("no app")
	}
	i := rapid.IntRange(0, len(m.apps)-1).Draw(t, "leaver")
	if err := m.arb.Leave(m.now, m.apps[i]); err != nil {
		t.Fatal(err)
	}
	m.apps = slices.Delete(m.apps, i, i+1)
}

func (m *arbMachine) fail(t *rapid.T) {
	g := rapid.SampledFrom(m.c.AllGPUs()).Draw(t, "gpu")
	if err := m.arb.Fail(m.now, g); err != nil {
		t.Fatal(err)
	}
	m.failed[g] = true
}

func (m *arbMachine) repair(t *rapid.T) {
	var down []topology.GPU
	for _, g := range m.c.AllGPUs() {
		if m.failed[g] {
			down = append(down, g)
		}
	}
	if len(down) == 0 {
		t.Skip("nothing failed")
	}
	g := rapid.SampledFrom(down).Draw(t, "gpu")
	if err := m.arb.Repair(m.now, g); err != nil {
		t.Fatal(err)
	}
	delete(m.failed, g)
}

func (m *arbMachine) advance(t *rapid.T) {
	dt := time.Duration(rapid.Int64Range(0, int64(2*m.lease)).Draw(t, "dt"))
	if next, ok := m.arb.NextEvent(); ok && rapid.Bool().Draw(t, "toNextEvent") {
		dt = next.Sub(m.now)
	}
	m.now = m.now.Add(dt)
	r, err := m.arb.Advance(context.Background(), m.now)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range m.arb.Leases() {
		if l.Start.Equal(m.now) {
			continue // leased in this round
		}
		if r.Offer.Free[l.GPU.Server] > m.c.Servers[l.GPU.Server].GPUs-1 {
			t.Fatalf("server %d offers %d free while %v stays leased", l.GPU.Server, r.Offer.Free[l.GPU.Server], l.GPU)
		}
	}
	m.checkRound(t, r)
}

// checkRound checks one round: filtering, the auction's grants within the
// offer, and leftovers and payments only to apps not invited.
func (m *arbMachine) checkRound(t *rapid.T, r *Round) {
	if r.Offer.Total() == 0 {
		if len(r.Grants) > 0 {
			t.Fatalf("grants without an offer: %+v", r.Grants)
		}
		return
	}
	n := len(r.Ranking)
	if want := min(max(int(math.Ceil((1-m.filter)*float64(n)-1e-9)), 1), n); len(r.Invited) != want {
		t.Fatalf("%d of %d apps invited at f = %v, want %d", len(r.Invited), n, m.filter, want)
	}
	for i := 1; i < n; i++ {
		if r.Ranking[i].Rho > r.Ranking[i-1].Rho {
			t.Fatalf("ranking not worst first: %+v", r.Ranking)
		}
	}
	invited := map[string]bool{}
	for _, id := range r.Invited {
		invited[id] = true
	}
	used := make([]int, len(r.Offer.Free))
	for _, g := range r.Grants {
		switch g.Kind {
		case Won:
			if !invited[g.App] {
				t.Fatalf("%s won without an invitation", g.App)
			}
			if want := time.Duration(math.Round(g.Keep * float64(m.lease))); g.Until.Sub(g.From) != want || g.Keep < 0 || g.Keep > 1 {
				t.Fatalf("%s won for %v with c = %v, want %v", g.App, g.Until.Sub(g.From), g.Keep, want)
			}
		case Overdue:
			if !invited[g.App] || g.Keep != 1 || g.Until.Sub(g.From) != m.lease {
				t.Fatalf("overdue grant %+v: not invited (%v) or not a full lease", g, r.Invited)
			}
		case Leftover, Payment:
			if len(r.Invited) < n && invited[g.App] {
				t.Fatalf("%v to %s, which was invited (%v)", g.Kind, g.App, r.Invited)
			}
			if g.App == g.Payer {
				t.Fatalf("payment of %s back to itself", g.App)
			}
		}
		if g.Kind == Payment {
			continue // the payer's GPUs, counted under Won
		}
		for _, gpu := range g.GPUs {
			used[gpu.Server]++
		}
	}
	for s := range used {
		if used[s] > r.Offer.Free[s] {
			t.Fatalf("server %d: %d GPUs granted, %d offered", s, used[s], r.Offer.Free[s])
		}
	}
}

// check is the invariant: no GPU leased twice or while failed, every lease
// current and at most one lease long, held by an app present.
func (m *arbMachine) check(t *rapid.T) {
	seen := map[topology.GPU]bool{}
	held := map[string]int{}
	for _, l := range m.arb.Leases() {
		switch {
		case seen[l.GPU]:
			t.Fatalf("GPU %v leased twice", l.GPU)
		case m.failed[l.GPU]:
			t.Fatalf("failed GPU %v leased to %s", l.GPU, l.App)
		case !slices.Contains(m.apps, l.App):
			t.Fatalf("GPU %v leased to %s, which left", l.GPU, l.App)
		case !l.End.After(m.now) || l.Start.After(m.now):
			t.Fatalf("lease %+v not current at %v", l, m.now)
		case l.End.Sub(l.Start) > m.lease:
			t.Fatalf("lease %+v longer than %v", l, m.lease)
		case l.PayTo != "" && (l.PayTo == l.App || l.PayUntil.Sub(l.Start) > m.lease || l.PayUntil.Before(l.End)):
			t.Fatalf("payment %+v", l)
		}
		seen[l.GPU] = true
		held[l.App]++
	}
	for _, id := range m.apps {
		if got := total(m.arb.Held(id)); got != held[id] {
			t.Fatalf("Held(%s) = %d, leases say %d", id, got, held[id])
		}
	}
	if next, ok := m.arb.NextEvent(); ok != (len(seen) > 0) || (ok && !next.After(m.now)) {
		t.Fatalf("NextEvent() = %v, %v at %v with %d leases", next, ok, m.now, len(seen))
	}
}

func TestArbiterStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCluster(t)
		m := &arbMachine{c: c, now: t0, failed: map[topology.GPU]bool{},
			lease:  time.Duration(rapid.IntRange(1, 20).Draw(t, "leaseMin")) * time.Minute,
			filter: rapid.SampledFrom([]float64{0, 0.25, 0.5, 0.8, 1}).Draw(t, "f")}
		var err error
		patience := rapid.IntRange(0, 3).Draw(t, "patience")
		m.arb, err = NewArbiter(c, &ArbiterSettings{Lease: m.lease, Filter: m.filter, Patience: patience}, rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
		if err != nil {
			t.Fatal(err)
		}
		t.Repeat(map[string]func(*rapid.T){
			"join":    m.join,
			"leave":   m.leave,
			"fail":    m.fail,
			"repair":  m.repair,
			"advance": m.advance,
			"":        m.check,
		})
	})
}

// TestArbiterAgentsThatFail: agents that error, bid nothing or bid NaN are
// reported and skipped; the honest app still gets the GPUs and the arbiter
// keeps going round after round.
func TestArbiterAgentsThatFail(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "m", Type: "v100", GPUs: 4}}}
	arb, err := NewArbiter(c, nil, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	job := ftf.SingleJob{ItersLeft: 3600, ItersTotal: 3600, IterTime: 1, DemandMax: 4, ClusterGPUs: 4, Contention: 4}
	for _, a := range []struct{ id, bad string }{{"broken", "error"}, {"honest", ""}, {"mute", "empty"}, {"nan", "nan"}} {
		if err := arb.Join(t0, a.id, testAgent{job: job, start: t0, bad: a.bad}); err != nil {
			t.Fatal(err)
		}
	}
	now := t0
	for round := 0; round < 3; round++ {
		r, err := arb.Advance(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		var failed []string
		for _, e := range r.Errors {
			var ae *AgentError
			if !errors.As(e, &ae) {
				t.Fatalf("round %d: error %v is not an *AgentError", round, e)
			}
			failed = append(failed, ae.App)
		}
		if want := []string{"broken", "nan"}; !slices.Equal(failed, want) {
			t.Errorf("round %d: failing agents %v, want %v (%v)", round, failed, want, r.Errors)
		}
		if len(r.Grants) != 1 || r.Grants[0].App != "honest" || len(r.Grants[0].GPUs) != 4 || r.Grants[0].Keep != 1 {
			t.Errorf("round %d: grants %+v, want all 4 GPUs won by honest with c = 1", round, r.Grants)
		}
		if !errors.Is(r.Errors[0], ErrNoBid) || !errors.Is(r.Errors[1], gpufair.ErrValue) {
			t.Errorf("round %d: errors %v, want ErrNoBid then gpufair.ErrValue", round, r.Errors)
		}
		next, ok := arb.NextEvent()
		if !ok || next.Sub(now) != DefaultLease {
			t.Fatalf("round %d: next event %v, %v, want one lease on", round, next, ok)
		}
		now = next
	}
}

func TestArbiterInputErrors(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "m", Type: "v100", GPUs: 2}}}
	src := rand.NewPCG(1, 1)
	for _, tc := range []struct {
		name string
		c    topology.Cluster
		s    ArbiterSettings
	}{
		{"no servers", topology.Cluster{}, ArbiterSettings{}},
		{"negative lease", c, ArbiterSettings{Lease: -time.Second}},
		{"filter above 1", c, ArbiterSettings{Filter: 1.5}},
		{"filter NaN", c, ArbiterSettings{Filter: math.NaN()}},
		{"negative patience", c, ArbiterSettings{Patience: -1}},
	} {
		if _, err := NewArbiter(tc.c, &tc.s, src); !errors.Is(err, gpufair.ErrValue) {
			t.Errorf("%s: NewArbiter error = %v, want gpufair.ErrValue", tc.name, err)
		}
	}
	arb, err := NewArbiter(c, nil, src)
	if err != nil {
		t.Fatal(err)
	}
	ag := testAgent{job: ftf.SingleJob{ItersLeft: 1, ItersTotal: 1, IterTime: 1, DemandMax: 1, ClusterGPUs: 2, Contention: 1}, start: t0}
	if err := arb.Join(t0.Add(time.Hour), "a", ag); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"join twice", arb.Join(t0.Add(time.Hour), "a", ag), gpufair.ErrDuplicate},
		{"join unnamed", arb.Join(t0.Add(time.Hour), "", ag), gpufair.ErrValue},
		{"join nil agent", arb.Join(t0.Add(time.Hour), "b", nil), gpufair.ErrValue},
		{"leave unknown", arb.Leave(t0.Add(time.Hour), "zz"), gpufair.ErrUnknownID},
		{"fail unknown GPU", arb.Fail(t0.Add(time.Hour), topology.GPU{Server: 0, Slot: 2}), gpufair.ErrUnknownID},
		{"time backwards", arb.Join(t0, "c", ag), gpufair.ErrValue},
	} {
		var ie *gpufair.InputError
		if !errors.Is(tc.err, tc.want) || !errors.As(tc.err, &ie) {
			t.Errorf("%s: error = %v, want an *gpufair.InputError wrapping %v", tc.name, tc.err, tc.want)
		}
	}
	if _, err := arb.Advance(context.Background(), t0); !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("Advance back in time: error = %v, want gpufair.ErrValue", err)
	}
}

// TestArbiterEveryAppWins: apps that keep having work (none leaves) each
// hold GPUs within a bounded number of leases, even with more apps than
// GPUs. At f = 1 (one app invited per round) this is Themis as published:
// an app holding nothing has rho +Inf and the apps that never won, or won
// longest ago, rank first; alone in the auction it keeps its row whole
// (c = 1). For f < 1 it needs ArbiterSettings.Patience (without it:
// TestArbiterStarvation): an app that stays hungry for p of its bids is
// served before the next auction it is invited to.
func TestArbiterEveryAppWins(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCluster(t)
		gpus := len(c.AllGPUs())
		n := rapid.IntRange(1, min(gpus+3, 8)).Draw(t, "apps")
		lease := 10 * time.Minute
		set := &ArbiterSettings{Lease: lease, Filter: rapid.SampledFrom([]float64{0, 0.25, 0.5, 0.8, 1}).Draw(t, "f")}
		if set.Filter < 1 {
			set.Patience = rapid.IntRange(1, 3).Draw(t, "patience")
		}
		arb, err := NewArbiter(c, set, rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 2))
		if err != nil {
			t.Fatal(err)
		}
		won := map[string]bool{}
		now := t0
		for i := 0; i < n; i++ {
			job := genJob(t, gpus, n)
			job.ItersLeft, job.ItersTotal = 1e9, 1e9 // never finishes
			if err := arb.Join(now, fmt.Sprintf("app%02d", i), testAgent{job: job, start: now}); err != nil {
				t.Fatal(err)
			}
		}
		horizon := now.Add(time.Duration((n+1)*(set.Patience+1)) * lease)
		for rounds := 0; now.Before(horizon); rounds++ {
			if _, err := arb.Advance(context.Background(), now); err != nil {
				t.Fatal(err)
			}
			for _, id := range arb.Apps() {
				if total(arb.Held(id)) > 0 {
					won[id] = true
				}
			}
			next, ok := arb.NextEvent()
			if !ok {
				t.Fatalf("no lease after round %d at %v: GPUs left idle", rounds, now.Sub(t0))
			}
			now = next
		}
		for _, id := range arb.Apps() {
			if !won[id] {
				t.Fatalf("%s held no GPU in %d leases (%d apps, %d GPUs)", id, n+1, n, gpus)
			}
		}
	})
}

// TestArbiterStarvation is the counterexample to liveness for f < 1, found
// by rapid: 4 apps on one 2-GPU server, f = 0.25, so 3 are invited. The
// auction maximises Π 1/rho; app02 can use 2 GPUs, so one GPU gives it twice
// the rho it gives the 1-GPU apps, and the product always prefers one GPU
// each to two of them. Inviting app02 every round does not help: the auction does
// not read the ranking, and leftovers and payments go to the app left out.
// The paper's argument that a loser's rho grows until it wins assumes its
// value for nothing is 0 while the others' rows stay as good; here every
// invited app holds nothing. ArbiterSettings.Patience ends the starvation
// (TestArbiterPatience).
func TestArbiterStarvation(t *testing.T) {
	lease := 10 * time.Minute
	arb := starvingArbiter(t, lease, 0)
	now := t0
	for now.Before(t0.Add(20 * lease)) {
		r, err := arb.Advance(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		if r.Offer.Total() > 0 && !slices.Contains(r.Invited, "app02") {
			t.Fatalf("at %v app02 is not invited (%v)", now.Sub(t0), r.Invited)
		}
		if h := total(arb.Held("app02")); h > 0 {
			t.Fatalf("app02 holds %d GPUs at %v: the counterexample no longer starves it", h, now.Sub(t0))
		}
		now, _ = arb.NextEvent()
	}
}

// TestArbiterPatience: TestArbiterStarvation's cluster with Patience 2.
// app02 bids and loses twice, then is served before the auction: its grant
// is Overdue, for a full lease, and no app is served that way before it
// has lost two bids.
func TestArbiterPatience(t *testing.T) {
	lease := 10 * time.Minute
	arb := starvingArbiter(t, lease, 2)
	lost := map[string]int{}
	now := t0
	for now.Before(t0.Add(20 * lease)) {
		r, err := arb.Advance(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range r.Grants {
			if g.Kind != Overdue {
				continue
			}
			if lost[g.App] < 2 || g.Keep != 1 || g.Until.Sub(g.From) != lease {
				t.Fatalf("overdue grant %+v after %d lost bids", g, lost[g.App])
			}
			if g.App == "app02" {
				return
			}
		}
		for _, b := range r.Bids {
			if total(arb.Held(b.App)) == 0 {
				lost[b.App]++
			} else {
				lost[b.App] = 0
			}
		}
		if total(arb.Held("app02")) > 0 {
			t.Fatalf("app02 holds GPUs at %v without an overdue grant", now.Sub(t0))
		}
		now, _ = arb.NextEvent()
	}
	t.Fatal("app02 still starves with Patience 2")
}

// starvingArbiter is TestArbiterStarvation's arbiter: one 2-GPU server,
// f = 0.25, and four apps that never finish, app02 able to use 2 GPUs and
// the others 1.
func starvingArbiter(t *testing.T, lease time.Duration, patience int) *Arbiter {
	t.Helper()
	c := topology.Cluster{Servers: []topology.Server{{Name: "m", Type: "v100", GPUs: 2}}}
	arb, err := NewArbiter(c, &ArbiterSettings{Lease: lease, Filter: 0.25, Patience: patience}, rand.NewPCG(0, 2))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []int{1, 1, 2, 1} {
		job := ftf.SingleJob{ItersLeft: 1e9, ItersTotal: 1e9, IterTime: 1, DemandMax: d, ClusterGPUs: 2, Contention: 4, Slowdown: topology.DefaultSlowdown()}
		if err := arb.Join(t0, fmt.Sprintf("app%02d", i), testAgent{job: job, start: t0}); err != nil {
			t.Fatal(err)
		}
	}
	return arb
}
