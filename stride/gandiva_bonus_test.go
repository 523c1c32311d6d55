package stride_test

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// bonusCluster returns k4 four-GPU servers of K80s and v4 of V100s.
func bonusCluster(k4, v4 int) topology.Cluster {
	var c topology.Cluster
	for i := range k4 {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprint("k80-", i), Type: "k80", GPUs: 4})
	}
	for i := range v4 {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprint("v100-", i), Type: "v100", GPUs: 4})
	}
	return c
}

// TestGandivaFairTradeKeepsSmallTenant's cluster: trading must leave B and
// C no worse off either. B fell from 23.71 to 21.97 work/s: A's four jobs,
// capped on both types, migrated between them every quantum, the mover
// pricing A's third V100 job at 3 V100s (A's tickets over the others'
// tickets per GPU) where readjustment gives A 2.67, and its moving jobs
// took V100 time from whichever of B and C shared their server: B above
// its 3 V100s without trading, below its 1.8 with.
func TestGandivaFairTradeKeepsEveryTenant(t *testing.T) {
	c := bonusCluster(4, 2)
	types := []topology.GPUType{"k80", "v100"}
	jobs := map[alloc.TenantID]int{"A": 4, "B": 40, "C": 40}
	speed := map[alloc.TenantID][]float64{"A": {1, 1.25}, "B": {1, 5}, "C": {1, 6.25}}
	without := gandivaThroughput(t, c, types, &stride.GandivaSettings{}, jobs, speed, 100, 400)
	with := gandivaThroughput(t, c, types, &stride.GandivaSettings{Trading: true}, jobs, speed, 100, 400)
	for _, u := range []alloc.TenantID{"A", "B", "C"} {
		if with[u] < without[u]*(1-demandTol) {
			t.Errorf("%s's throughput with trading %.3f work/s, below %.3f without", u, with[u], without[u])
		}
	}
}

// A job moves to a type where every tenant is capped by its demand if its
// tickets there entitle it to GPUs. B's and C's two jobs each run only on
// K80s and fill all four, A's share included; A's five jobs, ten times as
// fast on a V100, all start on the V100s, which A alone uses. Moving one to
// a K80 gains A a K80 (its tickets' share is 1.33 K80s) and costs it
// nothing on the V100s, but the mover priced it at the K80s B and C leave
// free, none, and A never moved a job.
func TestGandivaFairMovesToCappedType(t *testing.T) {
	c := bonusCluster(1, 1)
	types := []topology.GPUType{"k80", "v100"}
	s, err := stride.NewGandivaFair(c, types, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ev []round.Event
	for _, u := range []alloc.TenantID{"B", "C"} {
		for i := range 2 {
			ev = append(ev, round.Arrive(0, alloc.Job{ID: alloc.JobID(fmt.Sprintf("%s-%d", u, i)), Owner: u, Gang: 1, Weight: 1, Rates: []float64{1, 0}}, 0))
		}
	}
	for i := range 5 {
		ev = append(ev, round.Arrive(0, alloc.Job{ID: alloc.JobID(fmt.Sprint("A-", i)), Owner: "A", Gang: 1, Weight: 1, Rates: []float64{1, 10}}, 0))
	}
	if err := s.Apply(ev...); err != nil {
		t.Fatal(err)
	}
	for i := range 5 { // profiled: admission puts every job of A on the V100s
		id := alloc.JobID(fmt.Sprint("A-", i))
		if err := s.Profile(id, "k80", 1); err != nil {
			t.Fatal(err)
		}
		if err := s.Profile(id, "v100", 0.1); err != nil {
			t.Fatal(err)
		}
	}
	for q := range 3 {
		if _, err := s.Decide(context.Background(), float64(q)*stride.DefaultQuantum); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Fair().Demand("A", "k80"); got != 1 {
		t.Errorf("A's GPUs on K80s %d, want 1", got)
	}
}

// With no job arriving or leaving and every job's speed fixed, jobs stop
// migrating across types: after 100 quanta, none does in the next 100. A
// tenant capped by its demand on both types migrated a job between them
// every quantum: 4 GPUs of each type, tenants of 1, 3 and 20 jobs 1.25
// times as fast on the newer type.
func TestGandivaFairMigrationsSettle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := bonusCluster(rapid.IntRange(1, 4).Draw(t, "k80Servers"), rapid.IntRange(1, 2).Draw(t, "v100Servers"))
		types := []topology.GPUType{"k80", "v100"}
		s, err := stride.NewGandivaFair(c, types, &stride.GandivaSettings{Trading: rapid.Bool().Draw(t, "trading")})
		if err != nil {
			t.Fatal(err)
		}
		owner := map[alloc.JobID]alloc.TenantID{}
		speed := map[alloc.TenantID][]float64{}
		var jobs []alloc.JobID
		for i := range rapid.IntRange(2, 4).Draw(t, "tenants") {
			u := alloc.TenantID(fmt.Sprint("T", i))
			speed[u] = []float64{1, rapid.SampledFrom([]float64{1.25, 1.5, 2, 3, 5, 6.25}).Draw(t, "speedup")}
			for j := range rapid.SampledFrom([]int{1, 2, 3, 4, 5, 6, 20, 40}).Draw(t, "jobs") {
				id := alloc.JobID(fmt.Sprintf("%s-%02d", u, j))
				owner[id] = u
				jobs = append(jobs, id)
				if err := s.Apply(round.Arrive(0, alloc.Job{ID: id, Owner: u, Gang: 1, Weight: 1, Rates: []float64{1, 1}}, 0)); err != nil {
					t.Fatal(err)
				}
			}
		}
		done := map[alloc.JobID]float64{}
		on := map[alloc.JobID]topology.GPUType{}
		for q := range 200 {
			runQuantum(t, s, q, types, func(id alloc.JobID) []float64 { return speed[owner[id]] }, nil, done)
			for _, id := range jobs {
				typ, _ := s.Fair().Type(id)
				if q >= 100 && on[id] != typ {
					t.Fatalf("quantum %d: %s moved from %s to %s", q, id, on[id], typ)
				}
				on[id] = typ
			}
		}
	})
}
