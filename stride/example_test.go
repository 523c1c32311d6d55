package stride_test

import (
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// Gang-aware stride on one 4-GPU server (Gandiva_fair Table 2): 1-, 2- and
// 4-GPU jobs with 50 tickets each run 4, 2 and 1 of 6 quanta.
func ExampleScheduler() {
	s, _ := stride.NewScheduler(4)
	for _, j := range []alloc.Job{
		{ID: "A1", Gang: 1, Weight: 50}, {ID: "A2", Gang: 1, Weight: 50},
		{ID: "B1", Gang: 2, Weight: 50}, {ID: "B2", Gang: 2, Weight: 50},
		{ID: "C1", Gang: 4, Weight: 50}, {ID: "C2", Gang: 4, Weight: 50},
	} {
		_ = s.Add(j)
	}
	for q := 1; q <= 6; q++ {
		ran, _ := s.Schedule(q)
		fmt.Print(q, ":")
		for _, j := range ran {
			fmt.Print(" ", j.ID)
		}
		fmt.Println()
	}
	// Output:
	// 1: A1 A2 B1
	// 2: B2 A1 A2
	// 3: C1
	// 4: C2
	// 5: A1 A2 B1
	// 6: B2 A1 A2
}

// Split stride across two 4-GPU servers (Gandiva_fair section 5.2): an
// 8-GPU job, two 2-GPU jobs and four 1-GPU jobs, each user with 100 tickets,
// placed by ticket load; every three quanta each user gets 8 GPU-quanta.
func ExampleSplit() {
	f, _ := stride.NewFair(topology.Cluster{Servers: []topology.Server{
		{Name: "s0", Type: "p100", GPUs: 4}, {Name: "s1", Type: "p100", GPUs: 4},
	}}, nil)
	jobs := map[alloc.TenantID][]int{"u1": {8}, "u2": {2, 2}, "u3": {1, 1, 1, 1}}
	for _, u := range []alloc.TenantID{"u1", "u2", "u3"} {
		_ = f.AddTenant(alloc.Tenant{ID: u, Weight: 100})
		for k, size := range jobs[u] {
			_, _ = f.Submit(stride.Submission{ID: alloc.JobID(fmt.Sprintf("%s/%d", u, k)), Owner: u, Gang: size})
		}
	}
	got := map[alloc.TenantID]int{}
	for q := 1; q <= 3; q++ {
		plan, _ := f.Quantum(q)
		for _, r := range plan.Runs {
			u, _ := f.Owner(r.Job)
			got[u] += len(r.GPUs)
		}
		fmt.Printf("quantum %d: %d runs on %d GPUs\n", q, len(plan.Runs), plan.GPUs())
	}
	fmt.Println(got["u1"], got["u2"], got["u3"])
	// Output:
	// quantum 1: 1 runs on 8 GPUs
	// quantum 2: 6 runs on 8 GPUs
	// quantum 3: 6 runs on 8 GPUs
	// 8 8 8
}

// Placement by ticket load (Gandiva_fair Figure 1): A and B run two 2-GPU
// jobs each on two 4-GPU servers; C's 2-GPU job joins the first server, and
// the fair shares are C 2 GPUs, A and B 3 each.
func ExampleFair() {
	f, _ := stride.NewFair(topology.Cluster{Servers: []topology.Server{
		{Name: "s0", Type: "gpu", GPUs: 4}, {Name: "s1", Type: "gpu", GPUs: 4},
	}}, nil)
	for _, u := range []alloc.TenantID{"A", "B", "C"} {
		_ = f.AddTenant(alloc.Tenant{ID: u, Weight: 100})
	}
	for _, id := range []alloc.JobID{"A1", "A2", "B1", "B2", "C1"} {
		p, _ := f.Submit(stride.Submission{ID: id, Owner: alloc.TenantID(id[:1]), Gang: 2})
		fmt.Printf("%s on s%d\n", id, p.Parts[0].Server)
	}
	for _, a := range f.Accounts() {
		fmt.Printf("%s: %d GPUs of jobs, share %.3g\n", a.Tenant, a.Demand, a.Share)
	}
	fmt.Println("loads", f.Loads())
	// Output:
	// A1 on s0
	// A2 on s1
	// B1 on s0
	// B2 on s1
	// C1 on s0
	// A: 4 GPUs of jobs, share 3
	// B: 4 GPUs of jobs, share 3
	// C: 2 GPUs of jobs, share 2
	// loads [41.66666666666667 25]
}

// Gavel's round-based mechanism realising X_example (section 3.1) on one
// V100, one P100 and one K80: exact every five rounds.
func ExampleRounds() {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "v", Type: "v100", GPUs: 1}, {Name: "p", Type: "p100", GPUs: 1}, {Name: "k", Type: "k80", GPUs: 1},
	}}
	r, _ := stride.NewRounds(c, []topology.GPUType{"v100", "p100", "k80"})
	_ = r.Set(
		stride.Combo{ID: "job0", Jobs: []alloc.JobID{"job0"}, Gang: 1, Target: []float64{0.6, 0.4, 0}},
		stride.Combo{ID: "job1", Jobs: []alloc.JobID{"job1"}, Gang: 1, Target: []float64{0.2, 0.6, 0.2}},
		stride.Combo{ID: "job2", Jobs: []alloc.JobID{"job2"}, Gang: 1, Target: []float64{0.2, 0, 0.8}},
	)
	renewed := 0
	for q := 1; q <= 5; q++ {
		p, _ := r.Round(q)
		renewed += p.Renewals()
	}
	for _, id := range []string{"job0", "job1", "job2"} {
		f, _ := r.Received(id)
		fmt.Println(id, f)
	}
	fmt.Println("distance", r.Distance(), "lease renewals", renewed)
	// Output:
	// job0 [0.6 0.4 0]
	// job1 [0.2 0.6 0.2]
	// job2 [0.2 0 0.8]
	// distance 0 lease renewals 5
}

// OEF's rounding placer: a user with half of four GPUs and only 2-GPU jobs
// waits until its carried deviation reaches a job, then runs one.
func ExampleRounder() {
	r, _ := stride.NewRounder(topology.Cluster{Servers: []topology.Server{{Name: "s0", Type: "v100", GPUs: 4}}},
		[]topology.GPUType{"v100"},
		[]stride.Tenant{
			{ID: "small", Jobs: []alloc.Job{{ID: "s1", Gang: 2, Weight: 1}}},
			{ID: "big", Jobs: []alloc.Job{{ID: "b1", Gang: 1, Weight: 1}, {ID: "b2", Gang: 1, Weight: 1}, {ID: "b3", Gang: 1, Weight: 1}, {ID: "b4", Gang: 1, Weight: 1}}},
		})
	for q := 1; q <= 4; q++ {
		shares, plan, _ := r.Round(q, [][]float64{{0.5}, {3.5}})
		fmt.Printf("round %d: small %d, big %d, %d jobs placed, small's deviation %.3g\n",
			q, shares[0][0], shares[1][0], len(plan.Assignments), r.Deviation(0)[0])
	}
	// Output:
	// round 1: small 0, big 4, 4 jobs placed, small's deviation 0.5
	// round 2: small 0, big 3, 3 jobs placed, small's deviation 1
	// round 3: small 2, big 2, 3 jobs placed, small's deviation -0.5
	// round 4: small 0, big 4, 4 jobs placed, small's deviation 0
}

// Weight readjustment (Gandiva_fair section 3.2, Figure 1): 8 GPUs and
// three users of 100 tickets; C's jobs need only 2 GPUs, less than its 8/3,
// so its effective tickets drop to 200/3 and A and B share the rest.
func ExampleReadjust() {
	eff, share, err := stride.Readjust(8, []float64{100, 100, 100}, []float64{4, 4, 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("effective tickets %.3g\nshares %.3g\n", eff, share)
	// Output:
	// effective tickets [100 100 66.7]
	// shares [3 3 2]
}

// Migration when ticket loads drift apart: both jobs of the second server
// finish, and Rebalance moves one of the first server's jobs over.
func ExampleFair_Rebalance() {
	f, _ := stride.NewFair(topology.Cluster{Servers: []topology.Server{
		{Name: "s0", Type: "v100", GPUs: 4}, {Name: "s1", Type: "v100", GPUs: 4},
	}}, nil)
	_ = f.AddTenant(alloc.Tenant{ID: "a", Weight: 100})
	for _, id := range []alloc.JobID{"j0", "j1", "j2", "j3"} {
		_, _ = f.Submit(stride.Submission{ID: id, Owner: "a", Gang: 1})
	}
	_ = f.Finish("j1")
	_ = f.Finish("j3")
	fmt.Println("loads", f.Loads())
	for _, m := range f.Rebalance(10) {
		fmt.Printf("move %s from %s to %s\n", m.Job, m.From, m.To)
	}
	fmt.Println("loads", f.Loads())
	// Output:
	// loads [25 0]
	// move j0 from s0 to s1
	// loads [12.5 12.5]
}

// An alloc.Allocation (GPUs per type averaged over time) becomes the
// mechanism's time fractions: a 4-GPU job with 2 V100s on average runs half
// the time.
func ExampleFromAllocation() {
	jobs := []alloc.Job{{ID: "small", Owner: "u", Gang: 1, Weight: 1}, {ID: "big", Owner: "u", Gang: 4, Weight: 1}}
	a := &alloc.Allocation{
		Rows:  []string{"small", "big"},
		Types: []topology.GPUType{"v100", "k80"},
		GPUs:  [][]float64{{0.25, 0.75}, {2, 2}},
	}
	combos, err := stride.FromAllocation(jobs, a)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range combos {
		fmt.Println(c.ID, c.Gang, c.Target)
	}
	// Output:
	// small 1 [0.25 0.75]
	// big 4 [0.5 0.5]
}

// An allocation whose columns come in another order than the mechanism's
// types: SetAllocation matches them by name. Job a should run a quarter of
// the time on the V100, b three quarters.
func ExampleRounds_SetAllocation() {
	r, _ := stride.NewRounds(topology.Cluster{Servers: []topology.Server{
		{Name: "v", Type: "v100", GPUs: 1}, {Name: "k", Type: "k80", GPUs: 1},
	}}, []topology.GPUType{"v100", "k80"})
	err := r.SetAllocation(
		[]alloc.Job{{ID: "a", Owner: "u", Gang: 1, Weight: 1}, {ID: "b", Owner: "u", Gang: 1, Weight: 1}},
		&alloc.Allocation{Rows: []string{"a", "b"}, Types: []topology.GPUType{"k80", "v100"}, GPUs: [][]float64{{0.75, 0.25}, {0.25, 0.75}}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	for q := 1; q <= 8; q++ {
		_, _ = r.Round(q)
	}
	for _, id := range []string{"a", "b"} {
		f, _ := r.Received(id)
		fmt.Println(id, "v100, k80:", f)
	}
	// Output:
	// a v100, k80: [0.25 0.75]
	// b v100, k80: [0.75 0.25]
}

// Packing (Settings.Pack): on two 4-GPU servers, a 4-GPU gang and eight
// 1-GPU jobs, every tenant at one ticket per GPU. By ticket load alone two
// 1-GPU jobs end beside the gang, and its server idles 2 GPUs whenever the
// gang waits; packed, four do, and no GPU idles.
func ExampleFair_pack() {
	for _, pack := range []bool{false, true} {
		f, _ := stride.NewFair(topology.Cluster{Servers: []topology.Server{
			{Name: "s0", Type: "p100", GPUs: 4}, {Name: "s1", Type: "p100", GPUs: 4},
		}}, &stride.Settings{Pack: pack})
		_ = f.AddTenant(alloc.Tenant{ID: "big", Weight: 4})
		_, _ = f.Submit(stride.Submission{ID: "gang", Owner: "big", Gang: 4})
		for i := range 8 {
			u := alloc.TenantID(fmt.Sprint("u", i))
			_ = f.AddTenant(alloc.Tenant{ID: u, Weight: 1})
			_, _ = f.Submit(stride.Submission{ID: alloc.JobID(fmt.Sprint("j", i)), Owner: u, Gang: 1})
		}
		used := 0
		for q := 1; q <= 10; q++ {
			f.Rebalance(0.1)
			p, _ := f.Quantum(q)
			used += p.GPUs()
		}
		fmt.Printf("pack %v: jobs per server %d and %d, %d of 80 GPU-quanta used\n",
			pack, f.Split().Local(0).Len(), f.Split().Local(1).Len(), used)
	}
	// Output:
	// pack false: jobs per server 3 and 6, 70 of 80 GPU-quanta used
	// pack true: jobs per server 5 and 4, 80 of 80 GPU-quanta used
}
