package alloc

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkMaxTotalThroughput solves Gavel's throughput-maximising LP, and
// MinCost's, on random problems up to 20,000 jobs × 4 types whose rows are
// all distinct (one LP of jobs×types columns), and on Gavel's workload of
// 20,000 jobs × 3 types, whose jobs fall into about a hundred classes of
// equal rates and gang (one LP over the classes).
func BenchmarkMaxTotalThroughput(b *testing.B) {
	type instance struct {
		name string
		p    *Problem
	}
	var instances []instance
	for _, n := range []int{1000, 5000, 20000} {
		instances = append(instances, instance{fmt.Sprintf("distinct/jobs=%d/types=4", n), randomMaxMinProblem(b, n, 4, 1)})
	}
	instances = append(instances, instance{"gavel/jobs=20000/types=3", gavelWorkload(b, 20000, 1)})
	for _, in := range instances {
		cost := make([]float64, in.p.Capacity.NumTypes())
		for k := range cost {
			cost[k] = 1 + 1.5*float64(k)
		}
		for _, pol := range []Policy{MaxTotalThroughput{}, MinCost{Cost: cost}} {
			b.Run(in.name+"/"+pol.Name(), func(b *testing.B) {
				if _, err := pol.Allocate(context.Background(), in.p); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := pol.Allocate(context.Background(), in.p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
