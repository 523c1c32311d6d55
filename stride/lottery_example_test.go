package stride_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
)

// Table 2's comparison: lottery plus backfilling against gang-aware
// stride, on a 4-GPU server with two jobs each of 1, 2 and 4 GPUs and
// equal tickets. Stride gives the fair 2/3, 1/3 and 1/6 of the time;
// backfilling skips the 4-GPU jobs too often.
func ExampleLottery() {
	l, _ := stride.NewLottery(4, stride.Backfill, rand.NewPCG(1, 2))
	s, _ := stride.NewScheduler(4)
	for _, j := range []alloc.Job{
		{ID: "A1", Gang: 1, Weight: 50}, {ID: "A2", Gang: 1, Weight: 50},
		{ID: "B1", Gang: 2, Weight: 50}, {ID: "B2", Gang: 2, Weight: 50},
		{ID: "C1", Gang: 4, Weight: 50}, {ID: "C2", Gang: 4, Weight: 50},
	} {
		_ = l.Add(j)
		_ = s.Add(j)
	}
	const n = 6000
	lottery, strideRuns := map[alloc.JobID]int{}, map[alloc.JobID]int{}
	for q := 1; q <= n; q++ {
		a, _ := l.Schedule(q)
		for _, j := range a {
			lottery[j.ID]++
		}
		b, _ := s.Schedule(q)
		for _, j := range b {
			strideRuns[j.ID]++
		}
	}
	for _, id := range []alloc.JobID{"A1", "B1", "C1"} {
		fmt.Printf("%s: stride %.3g, lottery with backfilling %.2g\n", id, float64(strideRuns[id])/n, float64(lottery[id])/n)
	}
	// Output:
	// A1: stride 0.667, lottery with backfilling 0.79
	// B1: stride 0.333, lottery with backfilling 0.47
	// C1: stride 0.167, lottery with backfilling 0.073
}
