package auction

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
)

// benchBids builds n single-job apps' bid tables over the offer (seeded):
// demands of 1 to 16 GPUs, work of 1 to 50 GPU-hours, profiled slowdowns
// between compute-bound (1, 1.05, 1.1) and network-bound (1, 1.5, 2), some
// apps already running elsewhere (finite RhoNone).
func benchBids(tb testing.TB, o ftf.Offer, n int, seed uint64) []Bid {
	r := rand.New(rand.NewPCG(seed, 1))
	bids := make([]Bid, n)
	for i := range bids {
		net := r.Float64()
		job := ftf.SingleJob{
			Elapsed:     float64(r.IntN(3600)),
			ItersTotal:  float64(1000 + r.IntN(50000)),
			IterTime:    1 + r.Float64()*3,
			DemandMax:   []int{1, 2, 4, 8, 16}[r.IntN(5)],
			ClusterGPUs: 64,
			Contention:  float64(n) / 4,
			Slowdown:    topology.Slowdown{1, 1.05 + 0.45*net, 1.1 + 0.9*net},
		}
		job.ItersLeft = job.ItersTotal * (0.2 + 0.8*r.Float64())
		held := 0
		if r.IntN(2) == 0 {
			held = 1 + r.IntN(job.DemandMax)
		}
		rho := func(p ftf.Placement) (float64, error) {
			p.GPUs += held
			return job.Rho(p)
		}
		tab, err := ftf.NewTable(o, nil, rho, &ftf.TableSettings{MaxGPUs: job.DemandMax, PerShape: 2, MaxRows: 32})
		if err != nil {
			tb.Fatal(err)
		}
		bids[i] = Bid{App: fmt.Sprintf("app%02d", i), Table: tab}
	}
	return bids
}

func BenchmarkAuctionTables(b *testing.B) {
	for _, tc := range []struct{ servers, bidders int }{{4, 8}, {16, 20}} {
		b.Run(fmt.Sprintf("gpus=%d/bidders=%d", tc.servers*4, tc.bidders), func(b *testing.B) {
			o := racked(tc.servers, 4)
			bids := benchBids(b, o, tc.bidders, 1)
			if _, err := AuctionTables(context.Background(), o, bids); err != nil {
				b.Fatal(err)
			}
			nodes := 0
			for b.Loop() {
				out, _ := AuctionTables(context.Background(), o, bids)
				nodes += out.Nodes
			}
			b.ReportMetric(float64(nodes)/float64(b.N), "nodes/op")
		})
	}
}

func BenchmarkPartialAllocation(b *testing.B) {
	for _, tc := range []struct{ types, bidders int }{{4, 20}, {16, 20}} {
		b.Run(fmt.Sprintf("types=%d/bidders=%d", tc.types, tc.bidders), func(b *testing.B) {
			r := rand.New(rand.NewPCG(2, 2))
			counts := make([]float64, tc.types)
			for k := range counts {
				counts[k] = 4
			}
			c := cluster(counts...)
			vals := make([]alloc.Valuation, tc.bidders)
			for i := range vals {
				l := make(alloc.Linear, tc.types)
				for k := range l {
					l[k] = 1 + 9*r.Float64()
				}
				vals[i] = l
			}
			if _, err := PartialAllocation(context.Background(), c, names(tc.bidders), vals, nil); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				PartialAllocation(context.Background(), c, names(tc.bidders), vals, nil)
			}
		})
	}
}

// BenchmarkArbiterRound times one arbiter round at the scale of Themis'
// simulations: 256 GPUs (32 servers of 8 in 8 racks) and 200 one-job apps
// (demands of 1 to 16 GPUs, placement sensitivity from none to strong), with
// a 100 ms budget, at f = 0 (every app invited: 200 bids) and Themis' 0.8
// (40 bids). Each round starts when every lease has ended, so all 256 GPUs
// are offered. It reports the median and largest round time (wall clock,
// and the process's CPU time, which a loaded machine does not stretch),
// and the rounds more than 10% over budget.
func BenchmarkArbiterRound(b *testing.B) {
	const apps, budget = 200, 100 * time.Millisecond
	for _, f := range []float64{0, 0.8} {
		b.Run(fmt.Sprintf("gpus=256/apps=%d/f=%g", apps, f), func(b *testing.B) {
			var c topology.Cluster
			for s := range 32 {
				c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprint("m", s), Rack: fmt.Sprint("r", s/4), Type: "v100", GPUs: 8})
			}
			lease := 10 * time.Minute
			arb, err := NewArbiter(c, &ArbiterSettings{Lease: lease, Filter: f, Budget: budget}, rand.NewPCG(1, 1))
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(3, 3))
			for i := range apps {
				iters := float64(1000 + r.IntN(50000))
				net := r.Float64()
				job := ftf.SingleJob{ItersLeft: iters, ItersTotal: iters, IterTime: 1, DemandMax: []int{1, 2, 4, 8, 16}[r.IntN(5)],
					ClusterGPUs: 256, Contention: apps, Slowdown: topology.Slowdown{1, 1.05 + 0.45*net, 1.1 + 0.9*net}}
				if err := arb.Join(t0, fmt.Sprintf("app%03d", i), testAgent{job: job, start: t0}); err != nil {
					b.Fatal(err)
				}
			}
			now := t0
			round, err := arb.Advance(context.Background(), now)
			if err != nil || len(round.Bids) == 0 || len(round.Errors) > 0 {
				b.Fatalf("round: %d bids, errors %v, %v", len(round.Bids), round.Errors, err)
			}
			var took, cpu []time.Duration
			var grants, nodes, partial int
			for b.Loop() {
				now = now.Add(lease)
				c0 := processCPU(b)
				round, err = arb.Advance(context.Background(), now)
				if err != nil {
					b.Fatal(err)
				}
				cpu = append(cpu, processCPU(b)-c0)
				took = append(took, round.Took)
				grants += len(round.Grants)
				if round.Outcome != nil {
					nodes += round.Outcome.Nodes
				}
				if round.Partial {
					partial++
				}
			}
			slices.Sort(took)
			slices.Sort(cpu)
			over := 0
			for _, d := range took {
				if d > budget+budget/10 {
					over++
				}
			}
			n := float64(len(took))
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
			b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds())/1000, "median-cpu-ms")
			b.ReportMetric(float64(cpu[len(cpu)-1].Microseconds())/1000, "max-cpu-ms")
			b.ReportMetric(float64(over), "rounds>110%")
			b.ReportMetric(float64(partial)/n, "partial/op")
			b.ReportMetric(float64(grants)/n, "grants/op")
			b.ReportMetric(float64(nodes)/n, "nodes/op")
		})
	}
}

// processCPU returns the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
