package sim

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// genInstance draws a small cluster of one to three types and a workload
// whose every job fits some type it runs on.
func genInstance() *rapid.Generator[struct {
	w *Workload
	c topology.Cluster
}] {
	return rapid.Custom(func(t *rapid.T) struct {
		w *Workload
		c topology.Cluster
	} {
		nt := rapid.IntRange(1, 3).Draw(t, "types")
		types := make([]topology.GPUType, nt)
		var c topology.Cluster
		for k := range types {
			types[k] = topology.GPUType(fmt.Sprintf("t%d", k))
			for s := range rapid.IntRange(1, 3).Draw(t, "servers") {
				c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("%s-%d", types[k], s), Type: types[k], GPUs: rapid.IntRange(1, 4).Draw(t, "gpus")})
			}
		}
		w := &Workload{Types: types}
		for i := range rapid.IntRange(1, 12).Draw(t, "jobs") {
			j := Job{Job: alloc.Job{ID: alloc.JobID(fmt.Sprintf("j%02d", i)), Gang: rapid.IntRange(1, 4).Draw(t, "gang")}, Arrival: float64(rapid.IntRange(0, 100).Draw(t, "arrival")), Steps: float64(rapid.IntRange(1, 200).Draw(t, "steps"))}
			// Rates are 0 (cannot run there) or at least 0.1 step/s.
			j.Rates = rapid.SliceOfN(rapid.SampledFrom([]float64{0, 0.1, 0.5, 1, 2.5}), nt, nt).Draw(t, "rates")
			j.Rates[rapid.IntRange(0, nt-1).Draw(t, "fast")] = rapid.Float64Range(0.5, 3).Draw(t, "rate")
			if rapid.Bool().Draw(t, "spread") {
				j.Spread = make([]float64, nt)
				for k, r := range j.Rates {
					j.Spread[k] = r / 2
				}
			}
			_, count := c.Capacity()
			if !j.fits(count) {
				j.Gang = 1
			}
			w.Jobs = append(w.Jobs, j)
		}
		return struct {
			w *Workload
			c topology.Cluster
		}{w, c}
	})
}

// TestRunInvariants checks, on random instances under FIFO with GPUs
// failing for a while: every job finishes, no faster than its best rate allows and after it arrives; the
// GPU time fits in the cluster's GPU-rounds; contention is at least 1; and
// a second run is identical.
func TestRunInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInstance().Draw(t, "instance")
		L := rapid.Float64Range(1, 30).Draw(t, "round")
		// A restart shorter than a round, so a moved job still progresses.
		set := &Settings{Round: L, Restart: rapid.SampledFrom([]float64{0, L / 3}).Draw(t, "restart"), Horizon: 1e5}
		// GPUs fail for a while (each repaired, so every job can finish),
		// each failure repaired by 200g+199 and the next at 200(g+1) or
		// later: a repair that ended at 350+50 in floating point landed
		// after a failure drawn at 400+2.8e-14, which Run rightly refuses.
		for g := range rapid.IntRange(0, 3).Draw(t, "failures") {
			sv := rapid.IntRange(0, len(in.c.Servers)-1).Draw(t, "server")
			at := float64(200*g) + rapid.Float64Range(0, 150).Draw(t, "at")
			set.Failures = append(set.Failures, Failure{
				GPU: topology.GPU{Server: sv, Slot: rapid.IntRange(0, in.c.Servers[sv].GPUs-1).Draw(t, "slot")},
				At:  at, Repair: at + rapid.Float64Range(1, 49).Draw(t, "down"),
			})
		}
		res, err := Run(context.Background(), in.w, in.c, newFIFO(in.c, in.w.Types, L), set)
		if err != nil {
			t.Fatal(err)
		}
		var gpus int
		for _, s := range in.c.Servers {
			gpus += s.GPUs
		}
		s := res.Summary()
		if s.GPUSeconds > float64(gpus)*float64(res.Rounds)*L*(1+1e-12) {
			t.Fatalf("GPU time %v over %d GPUs × %d rounds × %v s", s.GPUSeconds, gpus, res.Rounds, L)
		}
		for i, j := range res.Jobs {
			job := in.w.Jobs[0]
			for _, x := range in.w.Jobs {
				if x.ID == j.ID {
					job = x
				}
			}
			best := maxOf(job.Rates)
			if !j.Finished() || j.Done != j.Steps {
				t.Fatalf("job %s did not finish (%v of %v steps)", j.ID, j.Done, j.Steps)
			}
			if j.JCT < j.Steps/best-1e-9 || j.Start < j.Arrival {
				t.Fatalf("job %s: JCT %v below %v, or start %v before arrival %v", j.ID, j.JCT, j.Steps/best, j.Start, j.Arrival)
			}
			if j.Contention < 1-1e-9 || !(j.Rho > 0) {
				t.Fatalf("job %s: contention %v, rho %v", j.ID, j.Contention, j.Rho)
			}
			if i > 0 && byArrival(&Job{Job: alloc.Job{ID: res.Jobs[i-1].ID}, Arrival: res.Jobs[i-1].Arrival}, &Job{Job: alloc.Job{ID: j.ID}, Arrival: j.Arrival}) >= 0 {
				t.Fatalf("jobs %d and %d out of order", i-1, i)
			}
		}
		again, err := Run(context.Background(), in.w, in.c, newFIFO(in.c, in.w.Types, L), set)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(res, again, cmp.Comparer(sameFloat)); diff != "" {
			t.Fatalf("second run differs (-first +second):\n%s", diff)
		}
	})
}
