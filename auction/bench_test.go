package auction

import (
	"context"
	"fmt"
	"math/rand/v2"
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
			out, err := AuctionTables(context.Background(), o, bids)
			if err != nil {
				b.Fatal(err)
			}
			nodes := 0
			for b.Loop() {
				out, _ = AuctionTables(context.Background(), o, bids)
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

// BenchmarkArbiterRound times one arbiter round over 64 GPUs (16 servers ×
// 4) and 20 apps at f = 0, Themis' 0.8 and 1: every lease has ended, so all
// GPUs are offered and every app holds nothing (RhoNone +Inf); the
// ⌈(1-f)·20⌉ invited agents (at least one) each build a bid table
// (ftf.NewTable), the auction runs and leftovers are drawn.
func BenchmarkArbiterRound(b *testing.B) {
	for _, tc := range []struct {
		f    float64
		bids int
	}{{0, 20}, {0.8, 4}, {1, 1}} {
		b.Run(fmt.Sprintf("f=%g", tc.f), func(b *testing.B) {
			o := racked(16, 4)
			lease := 10 * time.Minute
			arb, err := NewArbiter(o.Cluster, &ArbiterSettings{Lease: lease, Filter: tc.f}, rand.NewPCG(1, 1))
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(3, 3))
			for i := 0; i < 20; i++ {
				iters := float64(1000 + r.IntN(50000))
				net := r.Float64()
				job := ftf.SingleJob{ItersLeft: iters, ItersTotal: iters, IterTime: 1, DemandMax: []int{1, 2, 4, 8, 16}[r.IntN(5)],
					ClusterGPUs: 64, Contention: 5, Slowdown: topology.Slowdown{1, 1.05 + 0.45*net, 1.1 + 0.9*net}}
				ag := RhoAgent{RhoAt: testAgent{job: job, start: t0}.rhoAt, Table: &ftf.TableSettings{MaxGPUs: job.DemandMax, PerShape: 2, MaxRows: 32}}
				if err := arb.Join(t0, fmt.Sprintf("app%02d", i), ag); err != nil {
					b.Fatal(err)
				}
			}
			now := t0
			round, err := arb.Advance(context.Background(), now)
			if err != nil || len(round.Bids) != tc.bids || len(round.Errors) > 0 {
				b.Fatalf("round: %d bids, errors %v, %v", len(round.Bids), round.Errors, err)
			}
			var grants, nodes int
			for b.Loop() {
				now = now.Add(lease)
				round, err = arb.Advance(context.Background(), now)
				if err != nil {
					b.Fatal(err)
				}
				grants += len(round.Grants)
				if round.Outcome != nil {
					nodes += round.Outcome.Nodes
				}
			}
			b.ReportMetric(float64(grants)/float64(b.N), "grants/op")
			b.ReportMetric(float64(nodes)/float64(b.N), "nodes/op")
		})
	}
}
