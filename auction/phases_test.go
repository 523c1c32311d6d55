package auction_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// halvingPlan is a successive-halving plan of n trials (a power of 2) for
// app: log2(n)+1 phases, phase i's n/2^i trials elastic up to 2^i GPUs,
// each running iters steps at 1 step/s per GPU (Themis, section 4.3.2).
func halvingPlan(app alloc.TenantID, n int, iters float64) [][]auction.PlannedJob {
	var plan [][]auction.PlannedJob
	for i := 0; n>>i >= 1; i++ {
		var phase []auction.PlannedJob
		for k := range n >> i {
			g := 1 << i
			phase = append(phase, auction.PlannedJob{Job: alloc.Job{ID: alloc.JobID(fmt.Sprintf("%s-p%d-%02d", app, i, k)), Owner: app, Gang: g, Weight: 1, Rates: []float64{float64(g)}, Elastic: true}, Work: iters})
		}
		plan = append(plan, phase)
	}
	return plan
}

// agentOn returns an AppAgent for ledger l's jobs with plan, started at 0,
// at contention n and with work b.
func agentOn(l *round.Ledger, plan [][]auction.PlannedJob, n, b float64) *auction.AppAgent {
	capa, err := alloc.CapacityOf(l.Cluster(), l.Types())
	if err != nil {
		panic(err)
	}
	return &auction.AppAgent{
		Jobs: l.Jobs, Ledger: l, Capacity: capa, Epoch: time.Unix(0, 0).UTC(),
		Contention: func(float64) float64 { return n }, Work: func() float64 { return b }, Phases: plan,
	}
}

// TestAppAgentTable3 prices section 4.3.3's app through an AppAgent with a
// plan: 4 jobs of 80, 100, 100 and 120 s per iteration for 8 iterations in
// phase 1 (running), then 2 and 1 jobs of the median 100 s for 16 and 36
// iterations, job_demand_max 8, B = 10,000 GPU-seconds, 16 GPUs, N_avg = 4.
// Equation 2 applied literally gives ERRATA.md's 133/125, 133/250 and
// 259/750 for 4, 8 and 16 GPUs on one server; without the plan the agent
// sees phase 1 alone.
func TestAppAgentTable3(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "m", Type: "v100", GPUs: 16}}}
	l, err := round.NewLedger(c, []topology.GPUType{"v100"})
	if err != nil {
		t.Fatal(err)
	}
	// A job of gang 8 at rate 8/s serial seconds per iteration takes s
	// seconds per iteration on one GPU.
	job := func(id string, s float64) alloc.Job {
		return alloc.Job{ID: alloc.JobID(id), Owner: "app", Gang: 8, Weight: 1, Rates: []float64{8 / s}, Elastic: true}
	}
	var plan [][]auction.PlannedJob
	var phase1 []auction.PlannedJob
	for i, s := range []float64{80, 100, 100, 120} {
		phase1 = append(phase1, auction.PlannedJob{Job: job(fmt.Sprint("j", i), s), Work: 8})
		if err := l.Apply(round.Arrive(0, phase1[i].Job, 8)); err != nil {
			t.Fatal(err)
		}
	}
	plan = append(plan, phase1,
		[]auction.PlannedJob{{Job: job("k0", 100), Work: 16}, {Job: job("k1", 100), Work: 16}},
		[]auction.PlannedJob{{Job: job("m0", 100), Work: 36}})
	a := agentOn(l, plan, 4, 10000)
	for _, tc := range []struct {
		gpus           int
		want, phaseOne float64
	}{
		{4, 133.0 / 125, 960.0 / 2500},
		{8, 133.0 / 250, 480.0 / 2500},
		{16, 259.0 / 750, (80 * 8.0 / 3) / 2500},
	} {
		got, err := a.Rho(context.Background(), time.Unix(0, 0).UTC(), c, []int{tc.gpus})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("rho on %d GPUs = %v, want %v (equation 2, every phase)", tc.gpus, got, tc.want)
		}
		alone := *a
		alone.Phases = nil
		if got, _ := alone.Rho(context.Background(), time.Unix(0, 0).UTC(), c, []int{tc.gpus}); math.Abs(got-tc.phaseOne) > 1e-12 {
			t.Errorf("without the plan: rho on %d GPUs = %v, want %v (phase 1 alone)", tc.gpus, got, tc.phaseOne)
		}
	}
}

// TestAppAgentPhaseDemand checks, on random successive-halving apps part
// way through a random phase, that the agent's demand is its current
// phase's: no bid row and no leftover bundle takes it beyond the gangs of
// the current phase's trials still running, and it wants nothing once it
// holds that many; and that the later phases raise rho, never lower it.
func TestAppAgentPhaseDemand(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c topology.Cluster
		for s := range rapid.IntRange(1, 4).Draw(t, "servers") {
			c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprint("m", s), Rack: fmt.Sprint("r", s/2), Type: "v100", GPUs: rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "gpus")})
		}
		total := 0
		for _, s := range c.Servers {
			total += s.GPUs
		}
		n := rapid.SampledFrom([]int{2, 4, 8, 16}).Draw(t, "trials")
		plan := halvingPlan("sh", n, rapid.Float64Range(10, 1000).Draw(t, "iters"))
		// Phase i's trials are gangs of 2^i: only phases whose trials fit
		// the cluster can be running (the ledger refuses the others).
		fits := 0
		for fits+1 < len(plan) && 1<<(fits+1) <= total {
			fits++
		}
		cur := rapid.IntRange(0, fits).Draw(t, "phase")
		l, err := round.NewLedger(c, []topology.GPUType{"v100"})
		if err != nil {
			t.Fatal(err)
		}
		left := plan[cur][:rapid.IntRange(1, len(plan[cur])).Draw(t, "running")]
		phaseGangs := 0
		for _, pj := range plan[cur] {
			phaseGangs += pj.Gang
		}
		running := 0
		for _, pj := range left {
			if err := l.Apply(round.Arrive(0, pj.Job, pj.Work)); err != nil {
				t.Fatal(err)
			}
			running += pj.Gang
		}
		a := agentOn(l, plan, rapid.Float64Range(1, 10).Draw(t, "contention"), 1e5)
		free := make([]int, len(c.Servers))
		for s, sv := range c.Servers {
			free[s] = sv.GPUs
		}
		now := time.Unix(int64(rapid.IntRange(0, 5000).Draw(t, "now")), 0).UTC()
		tab, err := a.Bid(context.Background(), now, ftf.Offer{Cluster: c, Free: free}, make([]int, len(free)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range tab.Rows {
			if r.GPUs() > running || running > phaseGangs {
				t.Fatalf("row of %d GPUs; the phase's running trials use %d, its trials %d", r.GPUs(), running, phaseGangs)
			}
		}
		held := make([]int, len(free))
		for {
			b := a.Wants(held, free)
			if b == nil {
				break
			}
			for s := range b {
				held[s] += b[s]
				free[s] -= b[s]
			}
			if got := slices.Max([]int{0, sumInts(held)}); got > running {
				t.Fatalf("leftovers took it to %d GPUs, beyond its running trials' %d", got, running)
			}
		}
		if got := sumInts(held); got != min(running, total) {
			t.Fatalf("it wants %d GPUs in all, want min(%d running, %d in the cluster)", got, running, total)
		}
		with, _ := a.Rho(context.Background(), now, c, held)
		alone := *a
		alone.Phases = [][]auction.PlannedJob{plan[cur]} // same app_demand_max, no later phases
		without, _ := alone.Rho(context.Background(), now, c, held)
		if cur < len(plan)-1 && !(with > without) || cur == len(plan)-1 && with != without {
			t.Fatalf("phase %d of %d: rho %v with the later phases, %v without", cur, len(plan), with, without)
		}
	})
}

func sumInts(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// TestThemisHalvingBarrier runs successive-halving apps with a barrier
// between phases (sim.Job.Phase) under Themis with their plans: every job
// finishes; no trial of a phase starts before every trial of the phase
// before has finished; an app's placements never use more GPUs than its
// current phase's running trials' gangs; and an app stays in the arbiter
// across its barriers, from its first arrival to its last finish.
func TestThemisHalvingBarrier(t *testing.T) {
	c := topology.Cluster{}
	for s := range 4 {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprint("m", s), Rack: fmt.Sprint("r", s/2), Type: "v100", GPUs: 4})
	}
	w := &sim.Workload{Types: []topology.GPUType{"v100"}}
	plans := map[alloc.TenantID][][]auction.PlannedJob{}
	for a, n := range []int{4, 8, 2} {
		app := alloc.TenantID(fmt.Sprint("sh", a))
		plans[app] = halvingPlan(app, n, 900)
		for p, phase := range plans[app] {
			for _, pj := range phase {
				w.Jobs = append(w.Jobs, sim.Job{Job: pj.Job, Arrival: 400 * float64(a), Steps: pj.Work, Phase: p})
			}
		}
	}
	s, err := auction.NewThemis(c, w.Types, &auction.ThemisSettings{Round: 120, Arbiter: auction.ArbiterSettings{Filter: 0.8, Lease: 10 * time.Minute},
		Phases: func(app alloc.TenantID) [][]auction.PlannedJob { return plans[app] }}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	ch := &phaseChecked{Themis: s, t: t, present: map[alloc.TenantID][2]float64{}}
	res, err := sim.Run(context.Background(), w, c, ch, &sim.Settings{Round: 120})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.Apps {
		if math.IsNaN(a.Finish) {
			t.Fatalf("app %s did not finish", a.App)
		}
		if a.Demand != len(plans[a.App][0]) {
			t.Errorf("app %s: demand %d, want its phases' %d", a.App, a.Demand, len(plans[a.App][0]))
		}
		// Joined from the first decision after its arrival to the last
		// before its finish.
		if p := ch.present[a.App]; p[0] > a.Arrival+120 || p[1] < a.Finish-120 {
			t.Errorf("app %s in the arbiter over decisions [%v, %v]; it ran over [%v, %v]", a.App, p[0], p[1], a.Arrival, a.Finish)
		}
	}
	for _, j := range res.Jobs {
		for _, x := range res.Jobs {
			if x.Owner == j.Owner && x.Phase < j.Phase && !(j.Start >= x.Finish) {
				t.Errorf("%s (phase %d) started at %v, before %s (phase %d) finished at %v", j.ID, j.Phase, j.Start, x.ID, x.Phase, x.Finish)
			}
		}
	}
	if ch.gaps > 0 {
		t.Errorf("an app left the arbiter, or lost its leases, and came back %d times", ch.gaps)
	}
}

// phaseChecked is a Themis whose decisions are checked against the
// current phase of each app, recording the span of decisions each app is
// in the arbiter for.
type phaseChecked struct {
	*auction.Themis
	t       *testing.T
	present map[alloc.TenantID][2]float64 // first and last decision with the app joined
	gaps    int                           // times an app left the arbiter, or lost its leases, and came back
}

// Apply checks that no app present before and after the events loses
// GPUs by them (no GPU fails here): an app crossing a barrier keeps its
// leases.
func (c *phaseChecked) Apply(ev ...round.Event) error {
	before := map[string]int{}
	for _, app := range c.Arbiter().Apps() {
		before[app] = sumInts(c.Arbiter().Held(app))
	}
	if err := c.Themis.Apply(ev...); err != nil {
		return err
	}
	for _, app := range c.Arbiter().Apps() {
		if n, ok := before[app]; ok && sumInts(c.Arbiter().Held(app)) != n {
			c.gaps++
		}
	}
	return nil
}

func (c *phaseChecked) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	d, err := c.Themis.Decide(ctx, now)
	if err != nil {
		return nil, err
	}
	for _, name := range c.Arbiter().Apps() {
		app := alloc.TenantID(name)
		p, ok := c.present[app]
		if !ok {
			p[0] = now
		} else if p[1] < now-120 {
			c.gaps++
		}
		p[1] = now
		c.present[app] = p
	}
	running, used := map[alloc.TenantID]int{}, map[alloc.TenantID]int{}
	phase := map[alloc.TenantID]string{}
	for _, j := range c.Ledger().Jobs() {
		running[j.Owner] += j.Gang
		p := string(j.ID[:len(j.Owner)+3]) // "<app>-p<i>"
		if q, ok := phase[j.Owner]; ok && q != p {
			c.t.Errorf("at %v app %s has jobs of phases %s and %s in the system", now, j.Owner, q, p)
		}
		phase[j.Owner] = p
	}
	for _, pl := range d.Placements {
		j, _ := c.Ledger().Job(pl.Jobs[0])
		used[j.Owner] += len(pl.GPUs)
	}
	for app, u := range used {
		if u > running[app] {
			c.t.Errorf("at %v app %s uses %d GPUs, its running trials' gangs %d", now, app, u, running[app])
		}
	}
	return d, nil
}

// TestAppAgentJobLocality: two 4-GPU servers in a rack; an app holds two
// GPUs on each, and its jobs run at 2/3 of their rate spread over servers.
// Its 2-GPU jobs each fit on one server and run unslowed with JobLocality
// (section 4.3.2's S(G_j) per job), while without it the holding's spread
// slows both; a 4-GPU job fits on neither server and is slowed either way.
func TestAppAgentJobLocality(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "m0", Rack: "r", Type: "v100", GPUs: 4}, {Name: "m1", Rack: "r", Type: "v100", GPUs: 4}}}
	held := []int{2, 2}
	for _, tc := range []struct {
		gangs []int
		// T_sh in seconds, by the holding's slowdown and per job: 100
		// steps a job, each at g steps/s on its g GPUs on one server.
		holding, perJob float64
	}{
		{[]int{2, 2}, 75, 50},
		{[]int{4}, 37.5, 37.5},
	} {
		l, err := round.NewLedger(c, []topology.GPUType{"v100"})
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range tc.gangs {
			j := alloc.Job{ID: alloc.JobID(fmt.Sprint("j", i)), Owner: "app", Gang: g, Weight: 1, Rates: []float64{float64(g)}}
			if err := l.Apply(round.Arrive(0, j, 100)); err != nil {
				t.Fatal(err)
			}
		}
		for _, perJob := range []bool{false, true} {
			// T_id = B / min(R_C, D) = 400 / min(8, 4) = 100 s.
			a := agentOn(l, nil, 1, 400)
			a.Spread = func(id alloc.JobID) []float64 {
				j, _ := l.Job(id)
				return []float64{j.Rates[0] / 1.5}
			}
			a.JobLocality = perJob
			rho, err := a.Rho(context.Background(), time.Unix(0, 0).UTC(), c, held)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.holding / 100
			if perJob {
				want = tc.perJob / 100
			}
			if math.Abs(rho-want) > 1e-12*want {
				t.Errorf("gangs %v, JobLocality %v: rho %v, want %v", tc.gangs, perJob, rho, want)
			}
		}
	}
}

// TestAppAgentPricesGangsWhole: a rigid 4-GPU job on two GPUs of each of
// two servers, at 1/2.5 of its rate spread, runs on all four: 100 steps of
// 1 serial second each take 100·2.5/4 = 62.5 s. Priced as elastic, it
// would stay on one GPU, on which it cannot run (100 s).
func TestAppAgentPricesGangsWhole(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "m0", Rack: "r", Type: "v100", GPUs: 4}, {Name: "m1", Rack: "r", Type: "v100", GPUs: 4}}}
	l, err := round.NewLedger(c, []topology.GPUType{"v100"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(round.Arrive(0, alloc.Job{ID: "j", Owner: "app", Gang: 4, Weight: 1, Rates: []float64{4}}, 100)); err != nil {
		t.Fatal(err)
	}
	a := agentOn(l, nil, 1, 400) // T_id = 400 / min(8, 4) = 100 s
	a.Spread = func(alloc.JobID) []float64 { return []float64{4 / 2.5} }
	rho, err := a.Rho(context.Background(), time.Unix(0, 0).UTC(), c, []int{2, 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := 0.625; math.Abs(rho-want) > 1e-12 {
		t.Errorf("rho %v, want %v", rho, want)
	}
}
