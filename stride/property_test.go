package stride_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// passTol is the slack on pass comparisons: passes are base + n·stride and
// carry a few ulps of rounding.
const passTol = 1e-9

func jobID(i int) alloc.JobID { return alloc.JobID(fmt.Sprintf("j%02d", i)) }

// genServerJobs draws a server size and jobs that fit it.
func genServerJobs(t *rapid.T) (int, []alloc.Job) {
	g := rapid.IntRange(1, 8).Draw(t, "gpus")
	n := rapid.IntRange(1, 10).Draw(t, "jobs")
	jobs := make([]alloc.Job, n)
	for i := range jobs {
		jobs[i] = alloc.Job{
			ID:     jobID(i),
			Gang:   rapid.IntRange(1, g).Draw(t, "size"),
			Weight: float64(rapid.IntRange(1, 20).Draw(t, "tickets")),
		}
	}
	return g, jobs
}

// Safety and Algorithm 1's rules, quantum by quantum: no more GPUs than the
// server has; jobs are considered in (pass, ID) order and each runs exactly
// when it fits in what is left, so the job with the smallest pass always
// runs (the skipped job's one-quantum delay); a job that runs advances by its
// stride and a skipped job keeps its pass.
func TestGangAwareStrideRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g, jobs := genServerJobs(t)
		s, _ := stride.NewScheduler(g)
		for _, j := range jobs {
			if err := s.Add(j); err != nil {
				t.Fatal(err)
			}
		}
		for q := 1; q <= 50; q++ {
			order := s.Jobs()
			before := map[alloc.JobID]float64{}
			for _, j := range order {
				before[j.ID], _ = s.Pass(j.ID)
			}
			for i := 1; i < len(order); i++ {
				a, b := order[i-1], order[i]
				if before[a.ID] > before[b.ID] || (before[a.ID] == before[b.ID] && a.ID > b.ID) {
					t.Fatalf("quantum %d: %s before %s out of order", q, a.ID, b.ID)
				}
			}
			ran, err := s.Schedule(q)
			if err != nil {
				t.Fatal(err)
			}
			free := g
			var want []alloc.JobID
			for _, j := range order {
				if j.Gang <= free {
					free -= j.Gang
					want = append(want, j.ID)
				}
			}
			var got []alloc.JobID
			used := 0
			for _, j := range ran {
				got = append(got, j.ID)
				used += j.Gang
			}
			if used > g {
				t.Fatalf("quantum %d uses %d of %d GPUs", q, used, g)
			}
			if !slices.Equal(want, got) {
				t.Fatalf("quantum %d ran %v, want %v", q, got, want)
			}
			if len(order) > 0 && (len(got) == 0 || got[0] != order[0].ID) {
				t.Fatalf("quantum %d: smallest pass %s did not run", q, order[0].ID)
			}
			for _, j := range order {
				p, _ := s.Pass(j.ID)
				wantP := before[j.ID]
				if slices.Contains(got, j.ID) {
					wantP += strideOf(j)
				}
				if math.Abs(p-wantP) > passTol*math.Max(1, wantP) {
					t.Fatalf("quantum %d: %s pass %v, want %v", q, j.ID, p, wantP)
				}
			}
		}
	})
}

// No starvation: a job waiting at pass p runs within Σ_k (⌊(p − p_k)/s_k⌋ +
// 1) quanta, summed over the other jobs k with p_k ≤ p, since each quantum
// runs the job with the smallest pass and each such k can be ahead of the
// waiting job only that many times.
func TestNoStarvation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g, jobs := genServerJobs(t)
		s, _ := stride.NewScheduler(g)
		for _, j := range jobs {
			_ = s.Add(j)
		}
		deadline := map[alloc.JobID]int{}
		setDeadline := func(q int, id alloc.JobID) {
			p, _ := s.Pass(id)
			wait := 0
			for _, k := range s.Jobs() {
				pk, _ := s.Pass(k.ID)
				if k.ID != id && pk <= p+passTol {
					wait += int(math.Floor((p-pk)/strideOf(k)+passTol)) + 1
				}
			}
			deadline[id] = q + wait
		}
		for _, j := range jobs {
			setDeadline(1, j.ID)
		}
		for q := 1; q <= 200; q++ {
			ran, _ := s.Schedule(q)
			for _, j := range ran {
				setDeadline(q+1, j.ID)
			}
			for id, d := range deadline {
				if q >= d && !slices.ContainsFunc(ran, func(j alloc.Job) bool { return j.ID == id }) {
					t.Fatalf("%s did not run by quantum %d", id, d)
				}
			}
		}
	})
}

// Convergence to the ticket share: on a server whose gangs all have the same
// size d dividing the GPUs (a server of 1-GPU jobs, or of 2-GPU jobs), each
// job's GPU-time after Q quanta is within n·d GPU-quanta of Q times its fair
// share (tickets' share, capped at d and readjusted), n the number of jobs:
// the error stays bounded, so the average converges at rate n·d/Q. This is
// stride's absolute-error bound; the pairwise bound is next.
func TestConvergesToTicketShare(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.SampledFrom([]int{1, 2, 4}).Draw(t, "d")
		g := d * rapid.IntRange(1, 4).Draw(t, "slots")
		n := rapid.IntRange(1, 10).Draw(t, "jobs")
		s, _ := stride.NewScheduler(g)
		tickets := make([]float64, n)
		demand := make([]float64, n)
		for i := range n {
			tickets[i] = float64(rapid.IntRange(1, 20).Draw(t, "tickets"))
			demand[i] = float64(d)
			_ = s.Add(alloc.Job{ID: jobID(i), Gang: d, Weight: tickets[i]})
		}
		_, share, err := stride.Readjust(float64(g), tickets, demand)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float64, n)
		for q := 1; q <= 300; q++ {
			ran, _ := s.Schedule(q)
			for _, j := range ran {
				var k int
				fmt.Sscanf(string(j.ID), "j%d", &k)
				got[k] += float64(j.Gang)
			}
			for i := range n {
				if e := math.Abs(got[i] - float64(q)*share[i]); e > float64(n*d)+passTol {
					t.Fatalf("quantum %d: job %d has %v GPU-quanta, fair share %v (error %v > %d)", q, i, got[i], float64(q)*share[i], e, n*d)
				}
			}
		}
	})
}

// The one-quantum bound of stride, pairwise: on one GPU (Waldspurger's
// setting, and a 1-GPU server here), two jobs' passes never differ by more
// than the larger stride, so the GPU-time each gets per ticket differs by
// at most one quantum of either.
func TestPairwiseOneQuantum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 10).Draw(t, "jobs")
		s, _ := stride.NewScheduler(1)
		for i := range n {
			_ = s.Add(alloc.Job{ID: jobID(i), Gang: 1, Weight: float64(rapid.IntRange(1, 20).Draw(t, "tickets"))})
		}
		for q := 1; q <= 200; q++ {
			_, _ = s.Schedule(q)
			jobs := s.Jobs()
			lo, _ := s.Pass(jobs[0].ID)
			for _, j := range jobs {
				p, _ := s.Pass(j.ID)
				if p-lo > strideOf(j)+passTol {
					t.Fatalf("quantum %d: %s pass %v is more than its stride %v past %v", q, j.ID, p, strideOf(j), lo)
				}
			}
		}
	})
}

// clusterGen draws a cluster of 1 to 4 servers of one or two types.
func genCluster(t *rapid.T) topology.Cluster {
	var c topology.Cluster
	for i := range rapid.IntRange(1, 4).Draw(t, "servers") {
		c.Servers = append(c.Servers, topology.Server{
			Name: fmt.Sprintf("s%d", i),
			Type: rapid.SampledFrom([]topology.GPUType{"k80", "v100"}).Draw(t, "type"),
			GPUs: rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "gpus"),
		})
	}
	return c
}

// A state machine of user and job arrivals and departures, quanta and
// migrations on a Fair cluster, against a model of who and what is present.
// Each quantum uses each GPU slot at most once and only slots that exist,
// and runs each present job at most once and no absent job; the invariant:
// each user's demand is what its jobs add up to, and fair shares add up to
// at most each type's GPUs and to at most each user's demand.
func TestFairStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCluster(t)
		types, count := c.Capacity()
		pack := rapid.Bool().Draw(t, "pack")
		f, err := stride.NewFair(c, &stride.Settings{Pack: pack})
		if err != nil {
			t.Fatal(err)
		}
		users := map[alloc.TenantID][]alloc.JobID{}
		owner := map[alloc.JobID]alloc.TenantID{}
		var userIDs []alloc.TenantID
		nextUser, nextJob, q := 0, 0, 0
		t.Repeat(map[string]func(*rapid.T){
			"addUser": func(t *rapid.T) {
				id := alloc.TenantID(fmt.Sprintf("u%d", nextUser))
				nextUser++
				if err := f.AddTenant(alloc.Tenant{ID: id, Weight: float64(rapid.IntRange(1, 5).Draw(t, "tickets"))}); err != nil {
					t.Fatal(err)
				}
				users[id] = nil
				userIDs = append(userIDs, id)
			},
			"removeUser": func(t *rapid.T) {
				if len(userIDs) == 0 {
					t.Skip("no users")
				}
				i := rapid.IntRange(0, len(userIDs)-1).Draw(t, "user")
				id := userIDs[i]
				gone, err := f.RemoveTenant(id)
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(gone)
				if !slices.Equal(gone, users[id]) {
					t.Fatalf("removed %v, want %v", gone, users[id])
				}
				for _, j := range gone {
					delete(owner, j)
				}
				delete(users, id)
				userIDs = slices.Delete(userIDs, i, i+1)
			},
			"submit": func(t *rapid.T) {
				if len(userIDs) == 0 {
					t.Skip("no users")
				}
				u := rapid.SampledFrom(userIDs).Draw(t, "owner")
				ty := rapid.SampledFrom(types).Draw(t, "type")
				k := slices.Index(types, ty)
				size := rapid.IntRange(1, count[k]).Draw(t, "size")
				id := alloc.JobID(fmt.Sprintf("j%03d", nextJob))
				nextJob++
				p, err := f.Submit(stride.Submission{ID: id, Owner: u, Gang: size, Type: ty})
				if err != nil {
					t.Fatal(err)
				}
				sum := 0
				for _, part := range p.Parts {
					if c.Servers[part.Server].Type != ty {
						t.Fatalf("%s placed on a %s server", id, c.Servers[part.Server].Type)
					}
					sum += part.GPUs
				}
				if sum != size {
					t.Fatalf("%s placed on %d GPUs, want %d", id, sum, size)
				}
				users[u] = append(users[u], id)
				slices.Sort(users[u])
				owner[id] = u
			},
			"finish": func(t *rapid.T) {
				if len(owner) == 0 {
					t.Skip("no jobs")
				}
				var ids []alloc.JobID
				for j := range owner {
					ids = append(ids, j)
				}
				slices.Sort(ids)
				id := rapid.SampledFrom(ids).Draw(t, "job")
				if err := f.Finish(id); err != nil {
					t.Fatal(err)
				}
				u := owner[id]
				users[u] = slices.DeleteFunc(users[u], func(j alloc.JobID) bool { return j == id })
				delete(owner, id)
			},
			"quantum": func(t *rapid.T) {
				q++
				plan, err := f.Quantum(q)
				if err != nil {
					t.Fatal(err)
				}
				slots := map[topology.GPU]bool{}
				seen := map[alloc.JobID]bool{}
				for _, r := range plan.Runs {
					if _, ok := owner[r.Job]; !ok || seen[r.Job] {
						t.Fatalf("absent job %s runs, or runs twice", r.Job)
					}
					seen[r.Job] = true
					for _, g := range r.GPUs {
						if g.Server < 0 || g.Server >= len(c.Servers) || g.Slot < 0 || g.Slot >= c.Servers[g.Server].GPUs {
							t.Fatalf("slot %v does not exist", g)
						}
						if slots[g] {
							t.Fatalf("slot %v used twice", g)
						}
						slots[g] = true
					}
				}
			},
			"rebalance": func(t *rapid.T) {
				before := make([]int, len(c.Servers))
				for l := range c.Servers {
					before[l] = idleGPUs(f, l, owner)
				}
				for _, m := range f.Rebalance(float64(rapid.IntRange(0, 10).Draw(t, "threshold"))) {
					if _, ok := owner[m.Job]; !ok {
						t.Fatalf("migrated unknown job %s", m.Job)
					}
					// Packing: a single-server job leaving its server
					// opens no idle GPUs there, unless it fills more
					// elsewhere: a packing move counts the idle GPUs
					// of the type net (packMove; rapid found a 2-GPU
					// job leaving two 3-GPU gangs, one GPU idle, for
					// a server where it filled two).
					from := slices.IndexFunc(c.Servers, func(s topology.Server) bool { return s.Name == m.From })
					if l, _ := f.Split().Server(m.Job); pack && l >= 0 && idleGPUs(f, from, owner) > before[from] {
						was, now := 0, 0
						for k, sv := range c.Servers {
							if sv.Type == c.Servers[from].Type {
								was, now = was+before[k], now+idleGPUs(f, k, owner)
							}
						}
						if now >= was {
							t.Fatalf("moving %s off %s opened idle GPUs there (%d, was %d) and %d of its type in all, was %d", m.Job, m.From, idleGPUs(f, from, owner), before[from], now, was)
						}
					}
				}
			},
			"": func(t *rapid.T) {
				perType := map[topology.GPUType]float64{}
				for _, a := range f.Accounts() {
					if a.Share > float64(a.Demand)+passTol || a.Share < 0 {
						t.Fatalf("%s share %v of demand %d", a.Tenant, a.Share, a.Demand)
					}
					if a.Demand != demandOf(f, users[a.Tenant], a.Type, c) {
						t.Fatalf("%s demand %d", a.Tenant, a.Demand)
					}
					perType[a.Type] += a.Share
				}
				for k, ty := range types {
					if perType[ty] > float64(count[k])*(1+passTol) {
						t.Fatalf("%s shares %v of %d GPUs", ty, perType[ty], count[k])
					}
				}
			},
		})
	})
}

// idleGPUs is Settings.Pack's count of server l's idle GPUs: those its
// other jobs leave free while its largest gang (or part of one) waits;
// jobs are the jobs present.
func idleGPUs(f *stride.Fair, l int, jobs map[alloc.JobID]alloc.TenantID) int {
	sp := f.Split()
	sum, largest := 0, 0
	for _, j := range sp.Local(l).Jobs() {
		sum, largest = sum+j.Gang, max(largest, j.Gang)
	}
	for id := range jobs {
		if where, _ := sp.Server(id); where < 0 {
			for _, p := range sp.Parts(id) {
				if p.Server == l {
					sum, largest = sum+p.GPUs, max(largest, p.GPUs)
				}
			}
		}
	}
	g := sp.Cluster().Servers[l].GPUs
	if sum <= g {
		return 0
	}
	return max(0, g-(sum-largest))
}

func demandOf(f *stride.Fair, jobs []alloc.JobID, ty topology.GPUType, c topology.Cluster) int {
	d := 0
	for _, j := range jobs {
		if l, ok := f.Split().Server(j); ok {
			if l >= 0 {
				if c.Servers[l].Type == ty {
					for _, sj := range f.Split().Local(l).Jobs() {
						if sj.ID == j {
							d += sj.Gang
						}
					}
				}
				continue
			}
			for _, p := range f.Split().Parts(j) {
				if c.Servers[p.Server].Type == ty {
					d += p.GPUs
				}
			}
		}
	}
	return d
}

// Every job with tickets is eventually scheduled under split stride: in a
// random cluster with random users and jobs, each job runs within 500
// quanta.
func TestSplitNoStarvation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := genCluster(t)
		types, count := c.Capacity()
		f, _ := stride.NewFair(c, nil)
		nu := rapid.IntRange(1, 4).Draw(t, "users")
		var all []alloc.JobID
		for u := range nu {
			uid := alloc.TenantID(fmt.Sprintf("u%d", u))
			_ = f.AddTenant(alloc.Tenant{ID: uid, Weight: float64(rapid.IntRange(1, 5).Draw(t, "tickets"))})
			for j := range rapid.IntRange(1, 5).Draw(t, "jobs") {
				k := rapid.IntRange(0, len(types)-1).Draw(t, "type")
				id := alloc.JobID(fmt.Sprintf("u%d-%d", u, j))
				if _, err := f.Submit(stride.Submission{ID: id, Owner: uid, Gang: rapid.IntRange(1, count[k]).Draw(t, "size"), Type: types[k]}); err != nil {
					t.Fatal(err)
				}
				all = append(all, id)
			}
		}
		ran := map[alloc.JobID]bool{}
		for q := 1; q <= 500 && len(ran) < len(all); q++ {
			p, _ := f.Quantum(q)
			for _, r := range p.Runs {
				ran[r.Job] = true
			}
		}
		for _, id := range all {
			if !ran[id] {
				t.Fatalf("%s never ran in 500 quanta", id)
			}
		}
	})
}

// Starvations found by TestSplitNoStarvation, kept with the cluster, one
// user's jobs in order and the job that must run within 20 quanta.
func TestSplitBackfilledAggregateRegression(t *testing.T) {
	for _, tc := range []struct {
		name    string
		servers []topology.Server
		sizes   []int // u0's jobs j00, j01, ...; u1 has one job of bigSize
		bigSize int
		waits   alloc.JobID
	}{{
		// A 10-GPU job of u1 spans 1 + 2 + 7 GPUs, leaving one GPU of
		// the 8-GPU server, which its aggregate backfilled every quantum
		// with a 1-GPU job. Charged a whole server's stride each time,
		// the aggregate's pass outran the big job's and the 2-GPU job
		// never ran.
		name: "whole-server charge for one GPU",
		servers: []topology.Server{
			{Name: "s0", Type: "v100", GPUs: 1}, {Name: "s1", Type: "k80", GPUs: 1},
			{Name: "s2", Type: "v100", GPUs: 2}, {Name: "s3", Type: "v100", GPUs: 8},
		},
		sizes: []int{1, 1, 1, 2}, bigSize: 10, waits: "j03",
	}, {
		// u0's 9-, 11- and 10-GPU jobs take turns on 8 + 1..3 GPUs;
		// server s1's aggregate backfilled the 4-GPU job in what they
		// left and, charged for it, kept pace with their passes, tying
		// and losing the tie each time: the 8-GPU job never got s1.
		name:    "charged for backfill",
		servers: []topology.Server{{Name: "s0", Type: "v100", GPUs: 8}, {Name: "s1", Type: "v100", GPUs: 8}},
		sizes:   []int{9, 4, 8, 11, 10}, waits: "j02",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := stride.NewFair(topology.Cluster{Servers: tc.servers}, nil)
			_ = f.AddTenant(alloc.Tenant{ID: "u0", Weight: 1})
			_ = f.AddTenant(alloc.Tenant{ID: "u1", Weight: 2})
			for i, size := range tc.sizes {
				if _, err := f.Submit(stride.Submission{ID: jobID(i), Owner: "u0", Gang: size, Type: "v100"}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.bigSize > 0 {
				if _, err := f.Submit(stride.Submission{ID: "big", Owner: "u1", Gang: tc.bigSize, Type: "v100"}); err != nil {
					t.Fatal(err)
				}
			}
			for q := 1; q <= 20; q++ {
				plan, _ := f.Quantum(q)
				for _, r := range plan.Runs {
					if r.Job == tc.waits {
						return
					}
				}
			}
			t.Errorf("%s did not run in 20 quanta", tc.waits)
		})
	}
}

// Users' GPU-time converges to their fair shares on a Fair server: users
// with random tickets and random numbers of same-size jobs (the gang size d
// divides the server), job tickets from equation (3). After Q quanta each
// user's GPU-quanta are within n·d of Q times its share (tickets' share,
// readjusted for users who cannot use it all), n the number of jobs on the
// server: the error does not grow with Q.
func TestUserShareConverges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.SampledFrom([]int{1, 2, 4}).Draw(t, "d")
		g := d * rapid.IntRange(1, 4).Draw(t, "slots")
		f, _ := stride.NewFair(servers(1, g, "v100"), nil)
		n := 0
		for u := range rapid.IntRange(1, 5).Draw(t, "users") {
			uid := alloc.TenantID(fmt.Sprintf("u%d", u))
			_ = f.AddTenant(alloc.Tenant{ID: uid, Weight: float64(rapid.IntRange(1, 10).Draw(t, "tickets"))})
			for j := range rapid.IntRange(1, 5).Draw(t, "jobs") {
				if _, err := f.Submit(stride.Submission{ID: alloc.JobID(fmt.Sprintf("%s-%d", uid, j)), Owner: uid, Gang: d}); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
		share := map[alloc.TenantID]float64{}
		for _, a := range f.Accounts() {
			share[a.Tenant] = a.Share
		}
		got := map[alloc.TenantID]float64{}
		for q := 1; q <= 300; q++ {
			p, err := f.Quantum(q)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Runs {
				u, _ := f.Owner(r.Job)
				got[u] += float64(len(r.GPUs))
			}
			for u, s := range share {
				if e := math.Abs(got[u] - float64(q)*s); e > float64(n*d)+passTol {
					t.Fatalf("quantum %d: %s has %v GPU-quanta, share %v per quantum (error %v > %d)", q, u, got[u], s, e, n*d)
				}
			}
		}
	})
}

// strideOf is a job's stride, Gang/Weight, as the schedulers compute it.
func strideOf(j alloc.Job) float64 { return float64(j.Gang) / j.Weight }
