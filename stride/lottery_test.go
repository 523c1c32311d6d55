package stride_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
)

// table2Jobs are Table 2's six jobs on a 4-GPU server: users A, B and C of
// equal tickets, with two jobs each of 1, 2 and 4 GPUs (job tickets 50,
// as in TestTable2GangAwareStride).
func table2Jobs() []alloc.Job {
	return []alloc.Job{
		{ID: "A1", Gang: 1, Weight: 50}, {ID: "A2", Gang: 1, Weight: 50},
		{ID: "B1", Gang: 2, Weight: 50}, {ID: "B2", Gang: 2, Weight: 50},
		{ID: "C1", Gang: 4, Weight: 50}, {ID: "C2", Gang: 4, Weight: 50},
	}
}

// lotteryShares runs n quanta of mode from seed and returns the fraction
// of quanta each job ran.
func lotteryShares(t *testing.T, mode stride.LotteryMode, seed uint64, n int) map[alloc.JobID]float64 {
	t.Helper()
	l, err := stride.NewLottery(4, mode, rand.NewPCG(seed, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range table2Jobs() {
		if err := l.Add(j); err != nil {
			t.Fatal(err)
		}
	}
	got := map[alloc.JobID]float64{}
	for q := 1; q <= n; q++ {
		run, err := l.Schedule(q)
		if err != nil {
			t.Fatal(err)
		}
		used := 0
		for _, j := range run {
			got[j.ID] += 1 / float64(n)
			used += j.Gang
		}
		if used > 4 {
			t.Fatalf("quantum %d uses %d of 4 GPUs", q, used)
		}
	}
	return got
}

// Table 2's first row: lottery plus backfilling skips 4-GPU jobs more
// often than small ones, so over a long run the 1-GPU jobs get more than
// their fair 2/3 of the time and the 4-GPU jobs less than their 1/6 (the
// paper measured 71.8% and 12.4%/11.4%).
func TestTable2LotteryBackfilling(t *testing.T) {
	got := lotteryShares(t, stride.Backfill, 1, 100000)
	a := (got["A1"] + got["A2"]) / 2
	c := (got["C1"] + got["C2"]) / 2
	if !(a > 2./3+0.03) || !(c < 1./6-0.03) {
		t.Errorf("backfilling: 1-GPU jobs %.3f (fair 0.667), 4-GPU jobs %.3f (fair 0.167); want the paper's unfairness", a, c)
	}
	t.Logf("backfilling over 100,000 quanta: A %.3f, B %.3f, C %.3f (paper: 0.718, 0.367, 0.124/0.114)", a, (got["B1"]+got["B2"])/2, c)
}

// Table 2's second row: the gang-aware lottery is uneven over 100 quanta
// (the paper's B1 and B2 ran 46% and 24%), where gang-aware stride is
// exact over 6 (TestTable2GangAwareStride). The paper finds it fair over
// 1,000 quanta or more; read literally it is not, even over 100,000: the
// 4-GPU jobs get about 0.196 of the time for a fair 1/6, and the 1-GPU
// jobs about 0.55 for 2/3. A counterexample to the long-run fairness the
// text claims, kept as a test.
func TestTable2GangAwareLottery(t *testing.T) {
	fair := map[alloc.JobID]float64{"A1": 2. / 3, "A2": 2. / 3, "B1": 1. / 3, "B2": 1. / 3, "C1": 1. / 6, "C2": 1. / 6}
	worst := 0.0
	for seed := uint64(1); seed <= 20; seed++ {
		short := lotteryShares(t, stride.GangLottery, seed, 100)
		for id, f := range fair {
			worst = max(worst, math.Abs(short[id]-f))
		}
	}
	if worst <= 0.05 {
		t.Errorf("gang-aware lottery over 100 quanta is within %.3f of fair for 20 seeds; Table 2 shows it uneven", worst)
	}
	long := lotteryShares(t, stride.GangLottery, 1, 100000)
	a, c := (long["A1"]+long["A2"])/2, (long["C1"]+long["C2"])/2
	if !(c > 1./6+0.02) || !(a < 2./3-0.05) {
		t.Errorf("gang-aware lottery over 100,000 quanta: 1-GPU jobs %.3f, 4-GPU jobs %.3f; want the literal reading's bias", a, c)
	}
	t.Logf("gang-aware lottery: worst deviation over 100 quanta (20 seeds) %.3f; over 100,000 quanta A %.3f, B %.3f, C %.3f", worst, a, (long["B1"]+long["B2"])/2, c)
}

func TestLotteryRefuses(t *testing.T) {
	src := rand.NewPCG(1, 1)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"no GPUs", func() error { _, err := stride.NewLottery(0, stride.Backfill, src); return err }()},
		{"unknown mode", func() error { _, err := stride.NewLottery(4, 9, src); return err }()},
		{"no source", func() error { _, err := stride.NewLottery(4, stride.Backfill, nil); return err }()},
	} {
		if !errors.Is(tc.err, gpufair.ErrValue) {
			t.Errorf("%s: %v, want ErrValue", tc.name, tc.err)
		}
	}
	l, _ := stride.NewLottery(4, stride.GangLottery, src)
	if err := l.Add(alloc.Job{ID: "big", Gang: 8, Weight: 1}); !errors.Is(err, gpufair.ErrTooLarge) {
		t.Errorf("a gang larger than the server: %v, want ErrTooLarge", err)
	}
	_, _ = l.Schedule(2)
	if _, err := l.Schedule(2); !errors.Is(err, gpufair.ErrOrder) {
		t.Errorf("quantum repeated: %v, want ErrOrder", err)
	}
}

// Remove takes a job off the server in both modes: it reports true once
// and false for an unknown or already removed ID, the job never runs
// again (even where the gang-aware lottery had queued it), the others
// still run, and its ID may be added again.
func TestLotteryRemove(t *testing.T) {
	for _, mode := range []stride.LotteryMode{stride.Backfill, stride.GangLottery} {
		for seed := uint64(1); seed <= 5; seed++ {
			t.Run(fmt.Sprintf("mode %d seed %d", mode, seed), func(t *testing.T) {
				l, err := stride.NewLottery(4, mode, rand.NewPCG(seed, 3))
				if err != nil {
					t.Fatal(err)
				}
				for _, j := range table2Jobs() {
					if err := l.Add(j); err != nil {
						t.Fatal(err)
					}
				}
				// Let the 4-GPU jobs win lotteries they cannot use, so
				// that the gang-aware lottery queues them. C2 is the last
				// job by ID: a queued C2 left behind by Remove would be
				// looked up past the end of the jobs.
				q := 1
				for ; q <= 50; q++ {
					if _, err := l.Schedule(q); err != nil {
						t.Fatal(err)
					}
				}
				for _, id := range []alloc.JobID{"C2", "B2"} {
					if !l.Remove(id) {
						t.Errorf("Remove(%s) = false for a job on the server", id)
					}
				}
				for _, id := range []alloc.JobID{"C2", "nope", ""} {
					if l.Remove(id) {
						t.Errorf("Remove(%q) = true for a job not on the server", id)
					}
				}
				ran := map[alloc.JobID]int{}
				for ; q <= 550; q++ {
					run, err := l.Schedule(q)
					if err != nil {
						t.Fatal(err)
					}
					for _, j := range run {
						ran[j.ID]++
					}
				}
				for _, id := range []alloc.JobID{"C2", "B2"} {
					if ran[id] > 0 {
						t.Errorf("removed job %s ran %d times", id, ran[id])
					}
				}
				for _, id := range []alloc.JobID{"A1", "A2", "B1", "C1"} {
					if ran[id] == 0 {
						t.Errorf("job %s never ran in 500 quanta after the removals", id)
					}
				}
				if err := l.Add(alloc.Job{ID: "C2", Gang: 4, Weight: 50}); err != nil {
					t.Errorf("adding a removed ID again: %v", err)
				}
			})
		}
	}
}
