package alloc

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpufair/gpufair/lp"
)

// lpBackends returns the exact LP backends in this binary: CLP where cgo
// built it, and PureGo. The backend benchmarks time each workload with
// each, in one run, for the ratio PureGo / CLP (docs/benchmarks/lp.md).
func lpBackends() []lp.Backend {
	if lp.Default.Resolve() == lp.CLP {
		return []lp.Backend{lp.CLP, lp.PureGo}
	}
	return []lp.Backend{lp.PureGo}
}

// BenchmarkLPBackends times the max-min family's policies with each exact
// backend: max-min over distinct rows (decomposed), water filling (single
// level and two FIFO entities of 16), and MaxTotalThroughput's one LP.
// BenchmarkLPBackendsOEF does the same for OEF.
func BenchmarkLPBackends(b *testing.B) {
	fifo := []TenantID{"e0", "e1"}
	type workload struct {
		name   string
		jobs   int
		types  int
		policy func(set *lp.Settings) Policy
	}
	for _, w := range []workload{
		{"maxmin-distinct", 1024, 8, func(set *lp.Settings) Policy { return MaxMin{LP: set} }},
		{"maxmin-distinct", 4096, 8, func(set *lp.Settings) Policy { return MaxMin{LP: set} }},
		{"waterfilling", 2048, 3, func(set *lp.Settings) Policy { return WaterFilling{LP: set} }},
		{"waterfilling-2fifo", 2048, 3, func(set *lp.Settings) Policy { return Hierarchical{FIFO: fifo, LP: set} }},
		{"maxtotalthroughput", 2000, 4, func(set *lp.Settings) Policy { return MaxTotalThroughput{LP: set} }},
	} {
		p := randomMaxMinProblem(b, w.jobs, w.types, 1)
		withEntities(p, 16)
		for _, be := range lpBackends() {
			b.Run(fmt.Sprintf("%s/jobs=%d/types=%d/%v", w.name, w.jobs, w.types, be), func(b *testing.B) {
				pol := w.policy(&lp.Settings{Backend: be})
				if _, err := pol.Allocate(context.Background(), p); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := pol.Allocate(context.Background(), p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
