package stride_test

import (
	"fmt"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
	"pgregory.net/rapid"
)

// A gang that fills its server runs in at most half the quanta once any
// other job shares the server with the same tickets per GPU, whatever its
// tickets and however many jobs are there: every job's pass moves 1/t a
// run (t the tickets per GPU, equation 3), the full gang runs only when
// its pass is least, and it never runs beside another job. So a 4-GPU job
// of a tenant whose fair share is 2.4 GPUs gets at most 2 on a 4-GPU
// server it shares (docs/reproduction.md, Figure 6): per-server stride
// cannot give it more, and packing jobs beside it only fills the GPUs it
// leaves idle. With the server to itself it gets all of it.
func TestServerFillingGangRunsAtMostHalf(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gpus := rapid.IntRange(2, 8).Draw(t, "gpus")
		perGPU := float64(rapid.IntRange(1, 4).Draw(t, "ticketsPerGPU"))
		s, err := stride.NewScheduler(gpus)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Add(alloc.Job{ID: "full", Owner: "a", Gang: gpus, Weight: perGPU * float64(gpus)}); err != nil {
			t.Fatal(err)
		}
		others := rapid.IntRange(1, 6).Draw(t, "others")
		for i := range others {
			g := rapid.IntRange(1, gpus).Draw(t, "gang")
			if err := s.Add(alloc.Job{ID: alloc.JobID(fmt.Sprintf("j%d", i)), Owner: "b", Gang: g, Weight: perGPU * float64(g)}); err != nil {
				t.Fatal(err)
			}
		}
		const quanta = 200
		runs := 0
		for q := 1; q <= quanta; q++ {
			jobs, err := s.Schedule(q)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				if j.ID == "full" {
					runs++
				}
			}
		}
		if runs > (quanta+1)/2 {
			t.Fatalf("the full gang ran %d of %d quanta beside %d jobs", runs, quanta, others)
		}
	})
}

// The bound is met: a 4-GPU gang of 4 tickets beside one 1-GPU job of 1
// ticket runs every other quantum, and alone it runs every quantum.
func TestServerFillingGangHalfIsTight(t *testing.T) {
	for _, beside := range []int{0, 1, 3} {
		s, _ := stride.NewScheduler(4)
		_ = s.Add(alloc.Job{ID: "full", Owner: "a", Gang: 4, Weight: 4})
		for i := range beside {
			_ = s.Add(alloc.Job{ID: alloc.JobID(fmt.Sprintf("j%d", i)), Owner: "b", Gang: 1, Weight: 1})
		}
		runs, used := 0, 0
		for q := 1; q <= 100; q++ {
			jobs, _ := s.Schedule(q)
			for _, j := range jobs {
				used += j.Gang
				if j.ID == "full" {
					runs++
				}
			}
		}
		want := 50
		if beside == 0 {
			want = 100
		}
		if runs != want {
			t.Errorf("beside %d 1-GPU jobs the full gang ran %d of 100 quanta, want %d", beside, runs, want)
		}
		// Beside fewer than 4 one-GPU jobs the server idles 4 − beside
		// GPUs in the quanta the gang does not run (section 3.3).
		if wantUsed := 100*4 - 50*(4-beside); beside > 0 && used != wantUsed {
			t.Errorf("beside %d: %d GPU-quanta used, want %d", beside, used, wantUsed)
		}
	}
}
