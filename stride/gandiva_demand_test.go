package stride_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// demandTol is the relative shortfall of a tenant's throughput with trading
// below its throughput without that TestGandivaFairTradeKeepsSmallTenant
// allows: holding the same GPUs, the two schedulers still differ by a few
// tenths of a percent in which quanta a job runs.
const demandTol = 0.01

// gandivaThroughput runs Gandiva_fair over cluster c for n quanta, each job
// doing its tenant's speed[k] work per second per GPU on type k (a gang of g
// GPUs g times that), and returns each tenant's work per second over quanta
// [warm, n).
func gandivaThroughput(t *testing.T, c topology.Cluster, types []topology.GPUType, set *stride.GandivaSettings, jobs map[alloc.TenantID]int, speed map[alloc.TenantID][]float64, warm, n int) map[alloc.TenantID]float64 {
	t.Helper()
	s, err := stride.NewGandivaFair(c, types, set)
	if err != nil {
		t.Fatal(err)
	}
	owner := map[alloc.JobID]alloc.TenantID{}
	for _, u := range slices.Sorted(maps.Keys(jobs)) { // arrivals in ID order
		for i := range jobs[u] {
			id := alloc.JobID(fmt.Sprintf("%s-%03d", u, i))
			owner[id] = u
			if err := s.Apply(round.Arrive(0, alloc.Job{ID: id, Owner: u, Gang: 1, Weight: 1, Rates: ones(len(types))}, 0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	done := map[alloc.JobID]float64{}
	work := map[alloc.TenantID]float64{}
	for q := range n {
		runQuantum(t, s, q, types, func(id alloc.JobID) []float64 { return speed[owner[id]] }, func(id alloc.JobID, w float64) {
			if q >= warm {
				work[owner[id]] += w
			}
		}, done)
	}
	for u := range work {
		work[u] /= float64(n-warm) * stride.DefaultQuantum
	}
	return work
}

// runQuantum decides quantum q of s (one DefaultQuantum each) and
// reports the progress of the jobs it runs: a job does speed(id)[k] work
// per second per GPU on type k (types in s's order), added to done; ran,
// if not nil, is told each job's work in the quantum.
func runQuantum(t interface{ Fatal(...any) }, s *stride.GandivaFair, q int, types []topology.GPUType, speed func(alloc.JobID) []float64, ran func(alloc.JobID, float64), done map[alloc.JobID]float64) {
	Q := stride.DefaultQuantum
	d, err := s.Decide(context.Background(), float64(q)*Q)
	if err != nil {
		t.Fatal(err)
	}
	var progress []round.Event
	for _, p := range d.Placements {
		id := p.Jobs[0]
		w := Q * speed(id)[slices.Index(types, p.Type)] * float64(len(p.GPUs))
		done[id] += w
		if ran != nil {
			ran(id, w)
		}
		progress = append(progress, round.Progress(d.End, id, done[id]))
	}
	if err := s.Apply(progress...); err != nil {
		t.Fatal(err)
	}
}

// Trading must not cost a tenant throughput (Gandiva_fair section 3.4: each
// user in a trade is still guaranteed its fair share). It did not:
// on 16 K80s and 8 V100s, A's 4 jobs gain 1.25x from a V100, B's and C's 40
// jobs 5x and 6.25x. Bidding its holdings at Σ rate·GPUs, A sold its whole
// V100 share for 15.7 K80s its 4 jobs cannot use, and fell from 4.49 to
// 4.00 work/s; bidding with its jobs' Demand of 4 GPUs it keeps its V100s.
func TestGandivaFairTradeKeepsSmallTenant(t *testing.T) {
	var c topology.Cluster
	for i := range 4 {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprint("k80-", i), Type: "k80", GPUs: 4})
	}
	for i := range 2 {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprint("v100-", i), Type: "v100", GPUs: 4})
	}
	types := []topology.GPUType{"k80", "v100"}
	jobs := map[alloc.TenantID]int{"A": 4, "B": 40, "C": 40}
	speed := map[alloc.TenantID][]float64{"A": {1, 1.25}, "B": {1, 5}, "C": {1, 6.25}}
	without := gandivaThroughput(t, c, types, &stride.GandivaSettings{}, jobs, speed, 100, 400)
	with := gandivaThroughput(t, c, types, &stride.GandivaSettings{Trading: true}, jobs, speed, 100, 400)
	if with["A"] < without["A"]*(1-demandTol) {
		t.Errorf("A's throughput with trading %.3f work/s, below %.3f without", with["A"], without["A"])
	}
}
