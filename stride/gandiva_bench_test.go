package stride_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// gandivaBench is Gandiva_fair with trading on 1,024 GPUs (512 K80s, 256
// P100s and 256 V100s on 4-GPU servers), 1,000 tenants and 10,000 jobs
// (gangs in Philly's mix, section 3.3: mostly one GPU), each tenant's jobs
// running at its own speeds (V100 speedups of 1.25x to 6x, Table 1), which
// the scheduler profiles from the progress the jobs report.
type gandivaBench struct {
	s     *stride.GandivaFair
	speed map[alloc.TenantID][]float64
	done  map[alloc.JobID]float64
	prog  []round.Event
	now   float64
	next  int
	rng   *rand.Rand
}

func newGandivaBench(b testing.TB, tenants, jobs int, pack bool) *gandivaBench {
	b.Helper()
	types := []topology.GPUType{"k80", "p100", "v100"}
	counts := []int{512, 256, 256}
	var c topology.Cluster
	for k, t := range types {
		for i := range counts[k] / 4 {
			c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("%s-%d", t, i), Type: t, GPUs: 4})
		}
	}
	s, err := stride.NewGandivaFair(c, types, &stride.GandivaSettings{Trading: true, Migrations: 4, Pack: pack})
	if err != nil {
		b.Fatal(err)
	}
	g := &gandivaBench{s: s, speed: map[alloc.TenantID][]float64{}, done: map[alloc.JobID]float64{}, rng: rand.New(rand.NewPCG(1, 16))}
	for u := range tenants {
		p := 1 + 2*g.rng.Float64()
		g.speed[alloc.TenantID(fmt.Sprintf("u%04d", u))] = []float64{1, p, p * (1.25 + g.rng.Float64())}
	}
	var evs []round.Event
	for range jobs {
		evs = append(evs, g.arrival(0))
	}
	if err := s.Apply(evs...); err != nil {
		b.Fatal(err)
	}
	// Run until every tenant has been profiled and has traded.
	for range warmup {
		g.quantum(b)
	}
	if len(s.Trades()) == 0 {
		b.Fatal("fixture: no trade")
	}
	return g
}

// warmup is the quanta the fixture runs before it is timed.
const warmup = 40

func (g *gandivaBench) arrival(now float64) round.Event {
	return g.arrivalOf(now, alloc.TenantID(fmt.Sprintf("u%04d", g.rng.IntN(len(g.speed)))))
}

// arrivalOf returns a job of tenant u arriving at now.
func (g *gandivaBench) arrivalOf(now float64, u alloc.TenantID) round.Event {
	gang := []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8}[g.rng.IntN(20)]
	g.next++
	return round.Arrive(now, alloc.Job{ID: alloc.JobID(fmt.Sprintf("j%06d", g.next)), Owner: u, Gang: gang, Weight: 1, Rates: []float64{1, 1, 1}}, 0)
}

// quantum reports the last quantum's progress and decides the next.
func (g *gandivaBench) quantum(b testing.TB) *round.Decision {
	if err := g.s.Apply(g.prog...); err != nil {
		b.Fatal(err)
	}
	d, err := g.s.Decide(context.Background(), g.now)
	if err != nil {
		b.Fatal(err)
	}
	g.prog = g.prog[:0]
	for _, p := range d.Placements {
		id := p.Jobs[0]
		j, _ := g.s.Ledger().Job(id)
		k := map[topology.GPUType]int{"k80": 0, "p100": 1, "v100": 2}[p.Type]
		g.done[id] += stride.DefaultQuantum * g.speed[j.Owner][k]
		g.prog = append(g.prog, round.Progress(d.End, id, g.done[id]))
	}
	g.now = d.End
	return d
}

// BenchmarkGandivaQuantum times one quantum of Gandiva_fair with trading at
// 1,000 tenants and 10,000 jobs on 1,024 GPUs, progress reports included:
// "steady", with no arrival or departure, and "churn", where before each
// quantum one job departs and a new tenant arrives with one job (at the
// speeds of a tenant drawn at random, profiled beforehand with
// GandivaFair.Profile), so the market changes every quantum: tenants join
// and trade, and leave with their last job, their trades undone
// selectively. "-pack" packs jobs into servers (GandivaSettings.Pack).
func BenchmarkGandivaQuantum(b *testing.B) {
	for _, v := range []struct{ churn, pack bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		name := "steady"
		if v.churn {
			name = "churn"
		}
		if v.pack {
			name += "-pack"
		}
		churn := v.churn
		b.Run(name, func(b *testing.B) {
			g := newGandivaBench(b, 1000, 10000, v.pack)
			trades := len(g.s.Trades())
			var placed int
			cpu0 := cpuTime()
			for b.Loop() {
				if churn {
					jobs := g.s.Ledger().Jobs()
					id := jobs[g.rng.IntN(len(jobs))].ID
					g.next++
					u := alloc.TenantID(fmt.Sprintf("n%05d", g.next))
					g.speed[u] = g.speed[alloc.TenantID(fmt.Sprintf("u%04d", g.rng.IntN(1000)))]
					arr := g.arrivalOf(g.now, u)
					if err := g.s.Apply(round.Depart(g.now, id), arr); err != nil {
						b.Fatal(err)
					}
					// Its model was profiled before (a job of a multi-job
					// seen earlier), so it trades at once.
					for k, t := range []topology.GPUType{"k80", "p100", "v100"} {
						if err := g.s.Profile(arr.Job.ID, t, 1/g.speed[u][k]); err != nil {
							b.Fatal(err)
						}
					}
					g.prog = slicesDeleteJob(g.prog, id)
				}
				placed += len(g.quantum(b).Placements)
			}
			// CPU time, beside wall time: on a shared machine the wall
			// clock also counts the time other processes hold the cores.
			b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(placed)/float64(b.N), "gangs/op")
			b.ReportMetric(float64(len(g.s.Trades())-trades)/float64(b.N), "trades/op")
		})
	}
}

// cpuTime returns the process's user and system CPU time in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func slicesDeleteJob(evs []round.Event, id alloc.JobID) []round.Event {
	out := evs[:0]
	for _, e := range evs {
		if e.Job.ID != id {
			out = append(out, e)
		}
	}
	return out
}
