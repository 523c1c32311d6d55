package alloc

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkMaxTotalThroughput solves Gavel's throughput-maximising LP on
// random problems up to 20,000 jobs × 4 types (one LP of jobs×types
// columns; no aggregation of identical rows yet).
func BenchmarkMaxTotalThroughput(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		b.Run(fmt.Sprintf("jobs=%d/types=4", n), func(b *testing.B) {
			p := randomMaxMinProblem(b, n, 4, 1)
			if _, err := (MaxTotalThroughput{}).Allocate(context.Background(), p); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := (MaxTotalThroughput{}).Allocate(context.Background(), p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
