package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
)

// ThemisScheduler runs Themis' multi-round auction arbiter (NSDI'20,
// section 3.3.2; auction.Arbiter) in the simulator: each job is an app
// whose agent bids, for the GPUs offered, the finish-time fairness it
// expects with them, rho = (elapsed + remaining/rate) / T_id, where rate is
// the job's throughput on the best placement its GPUs allow (Rates on one
// server, Spread across servers) and T_id its time alone on a 1/n share of
// the cluster, n being the active jobs (the package's definition). Winners
// lease their GPUs for c_i of the lease; hidden payments and leftovers go
// to apps drawn at random, as the arbiter does.
//
// Jobs are gangs: a job runs in a round only if it holds at least Gang GPUs
// of one type, on Gang of them (one server if it can); GPUs it holds beyond
// that, or that cannot form a gang (a leftover of the wrong size or type),
// stay idle for their lease, which Themis' elastic apps would not waste.
// Bids offer, per GPU type the job runs on, the best-fitting single server
// that completes its gang and the spread alternative over the servers with
// the most free GPUs, keeping the rows that improve on the job's current rho.
//
// The arbiter runs once per simulator round (its Advance), so a lease that
// ends within a round is released at the next round's start: use rounds no
// longer than the lease. The zero value is not usable; build one with
// NewThemisScheduler.
type ThemisScheduler struct {
	arb        *auction.Arbiter
	c          topology.Cluster
	count      []int // GPUs of each workload type
	serverType []int
	epoch      time.Time
	apps       map[alloc.JobID]*themisApp
	active     int
	held       map[string][]topology.GPU // scratch: slots per app
}

// NewThemisScheduler returns Themis' arbiter on cluster c for a workload over
// types, with the lease and filtering fraction of s (nil: a 10-minute lease,
// f = 0) and the arbiter's random draws from src. It returns the errors of
// auction.NewArbiter and an *gpufair.InputError for a type c lacks.
func NewThemisScheduler(c topology.Cluster, types []topology.GPUType, s *auction.ArbiterSettings, src rand.Source) (*ThemisScheduler, error) {
	arb, err := auction.NewArbiter(c, s, src)
	if err != nil {
		return nil, err
	}
	t := &ThemisScheduler{arb: arb, c: c, epoch: time.Unix(0, 0).UTC(), apps: map[alloc.JobID]*themisApp{}}
	if t.count, err = typeCounts(c, types, "Types"); err != nil {
		return nil, err
	}
	t.serverType = make([]int, len(c.Servers))
	for i, sv := range c.Servers {
		t.serverType[i] = slices.Index(types, sv.Type)
	}
	return t, nil
}

// Name returns "themis".
func (t *ThemisScheduler) Name() string { return "themis" }

// Schedule runs an arbiter round (Advance) at the round's start and places
// every job that holds a gang's worth of GPUs of one type.
func (t *ThemisScheduler) Schedule(ctx context.Context, st *State) ([]Placement, error) {
	now := t.epoch.Add(time.Duration(st.Now * float64(time.Second)))
	for _, id := range st.Departed {
		if t.apps[id] != nil {
			delete(t.apps, id)
			if err := t.arb.Leave(now, string(id)); err != nil {
				return nil, err
			}
		}
	}
	for i := range st.Active {
		a := &st.Active[i]
		app := t.apps[a.Job.ID]
		if app == nil {
			app = &themisApp{job: a.Job, s: t}
			t.apps[a.Job.ID] = app
			if err := t.arb.Join(now, string(a.Job.ID), app); err != nil {
				return nil, err
			}
		}
		app.remaining = a.Remaining
	}
	t.active = len(st.Active)
	if _, err := t.arb.Advance(ctx, now); err != nil {
		return nil, err
	}
	clear(t.held)
	if t.held == nil {
		t.held = map[string][]topology.GPU{}
	}
	for _, l := range t.arb.Leases() {
		t.held[l.App] = append(t.held[l.App], l.GPU)
	}
	var out []Placement
	for _, a := range st.Active {
		if g := t.gang(a.Job, t.held[string(a.Job.ID)]); g != nil {
			out = append(out, Placement{Job: a.Job.ID, GPUs: g})
		}
	}
	return out, nil
}

// gang picks the job's GPUs for the round among the slots it holds: the
// type and placement of highest rate, a single server when one holds a
// gang, or else the servers holding most; nil when no type has a gang.
func (t *ThemisScheduler) gang(j *Job, held []topology.GPU) []topology.GPU {
	var best []topology.GPU
	bestRate := 0.0
	for k := range t.count {
		var slots []topology.GPU
		perServer := map[int]int{}
		for _, g := range held {
			if t.serverType[g.Server] == k {
				slots = append(slots, g)
				perServer[g.Server]++
			}
		}
		if len(slots) < j.Gang {
			continue
		}
		// Servers holding most first, then by index: the first Gang slots
		// lie on the fewest servers.
		slices.SortFunc(slots, func(a, b topology.GPU) int {
			if c := perServer[b.Server] - perServer[a.Server]; c != 0 {
				return c
			}
			if c := a.Server - b.Server; c != 0 {
				return c
			}
			return a.Slot - b.Slot
		})
		g := slots[:j.Gang]
		if r := j.rate(k, topology.ServersUsed(g) > 1); r > bestRate {
			best, bestRate = slices.Clone(g), r
		}
	}
	return best
}

// themisApp is a job's agent.
type themisApp struct {
	job       *Job
	remaining float64
	s         *ThemisScheduler
}

// rho returns the job's rho at now if it kept the GPUs counts[s] (per
// server) until it finishes; +Inf if they hold no gang.
func (a *themisApp) rho(now time.Time, counts []int) float64 {
	s := a.s
	best := 0.0
	for k := range s.count {
		total, one := 0, false
		for sv, n := range counts {
			if s.serverType[sv] == k && n > 0 {
				total += n
				one = one || n >= a.job.Gang
			}
		}
		if total >= a.job.Gang {
			best = math.Max(best, a.job.rate(k, !one))
		}
	}
	if best == 0 {
		return math.Inf(1)
	}
	elapsed := now.Sub(s.epoch).Seconds() - a.job.Arrival
	return (elapsed + a.remaining/best) / isolatedTime(a.job, s.count, float64(s.active))
}

// Rho is the agent's current rho with what it holds.
func (a *themisApp) Rho(_ context.Context, now time.Time, _ topology.Cluster, held []int) (float64, error) {
	return a.rho(now, held), nil
}

// Bid offers, per type, the best-fitting server that completes the gang
// and the spread alternative, each priced at the rho it gives.
func (a *themisApp) Bid(_ context.Context, now time.Time, offer ftf.Offer, held []int) (ftf.BidTable, error) {
	s := a.s
	if held == nil {
		held = make([]int, len(offer.Free))
	}
	tab := ftf.BidTable{RhoNone: a.rho(now, held)}
	seen := map[string]bool{}
	add := func(row []int) {
		key := ""
		for _, n := range row {
			key += strconv.Itoa(n) + ","
		}
		if seen[key] {
			return
		}
		seen[key] = true
		sum := slices.Clone(held)
		for i, n := range row {
			sum[i] += n
		}
		if r := a.rho(now, sum); r < tab.RhoNone {
			tab.Rows = append(tab.Rows, ftf.Row{Counts: row, Rho: r})
		}
	}
	g := a.job.Gang
	for k := range s.count {
		if a.job.Rates[k] <= 0 || g > s.count[k] {
			continue
		}
		fit, heldK := -1, 0
		var servers []int
		for sv := range offer.Free {
			if s.serverType[sv] != k {
				continue
			}
			heldK += held[sv]
			servers = append(servers, sv)
			need := g - held[sv]
			if need > 0 && need <= offer.Free[sv] && (fit < 0 || offer.Free[sv]-need < offer.Free[fit]-(g-held[fit])) {
				fit = sv
			}
		}
		if fit >= 0 {
			row := make([]int, len(offer.Free))
			row[fit] = g - held[fit]
			add(row)
		}
		if need := g - heldK; need > 0 {
			slices.SortStableFunc(servers, func(x, y int) int { return offer.Free[y] - offer.Free[x] })
			row := make([]int, len(offer.Free))
			for _, sv := range servers {
				take := min(need, offer.Free[sv])
				row[sv], need = take, need-take
			}
			if need == 0 {
				add(row)
			}
		}
	}
	slices.SortStableFunc(tab.Rows, func(x, y ftf.Row) int {
		switch {
		case x.Rho < y.Rho:
			return -1
		case x.Rho > y.Rho:
			return 1
		}
		return 0
	})
	return tab, nil
}
