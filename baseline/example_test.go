package baseline_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/baseline"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// exampleCluster has two K80s on one server and two V100s on another.
var exampleCluster = topology.Cluster{Servers: []topology.Server{
	{Name: "k80-0", Type: "k80", GPUs: 2},
	{Name: "v100-0", Type: "v100", GPUs: 2},
}}

var exampleTypes = []topology.GPUType{"k80", "v100"}

// exampleJobs arrive at 0, five GPUs' worth on four: a long job, a short
// one, a 2-GPU gang and one in between, each
// with its work in steps and its steps per second on K80 and V100.
func exampleJobs() []round.Event {
	return []round.Event{
		round.Arrive(0, alloc.Job{ID: "long", Gang: 1, Weight: 1, Rates: []float64{1, 4}}, 20000),
		round.Arrive(0, alloc.Job{ID: "short", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 1000),
		round.Arrive(0, alloc.Job{ID: "gang", Gang: 2, Weight: 1, Rates: []float64{1, 3}}, 5000),
		round.Arrive(0, alloc.Job{ID: "mid", Gang: 1, Weight: 1, Rates: []float64{1, 1.5}}, 3000),
	}
}

// run drives s for four 6-minute rounds, reporting each job's progress at
// the end of a round and its departure when it finishes, as a scheduler's
// loop (or package sim) does, and prints each decision.
func run(s round.Scheduler) {
	ctx := context.Background()
	work := map[alloc.JobID]float64{}
	rates := map[alloc.JobID][]float64{}
	evs := exampleJobs()
	for _, e := range evs {
		work[e.Job.ID], rates[e.Job.ID] = e.Work, e.Job.Rates
	}
	done := map[alloc.JobID]float64{}
	const lease = 360.0
	for now := 0.0; now < 4*lease; now += lease {
		if err := s.Apply(evs...); err != nil {
			fmt.Println(err)
			return
		}
		evs = nil
		d, err := s.Decide(ctx, now)
		if err != nil {
			fmt.Println(err)
			return
		}
		var out []string
		for _, p := range d.Placements {
			id := p.Jobs[0]
			out = append(out, fmt.Sprintf("%s on %d %s", id, len(p.GPUs), p.Type))
			r := rates[id][slices.Index(exampleTypes, p.Type)]
			if left := work[id] - done[id]; left <= r*lease {
				evs = append(evs, round.Depart(now+left/r, id))
				continue
			}
			done[id] += r * lease
			evs = append(evs, round.Progress(now+lease, id, done[id]))
		}
		slices.SortStableFunc(evs, func(a, b round.Event) int { return cmp.Compare(a.Time, b.Time) })
		fmt.Printf("round %d: %s\n", d.Round, strings.Join(out, ", "))
	}
}

// Shortest remaining time first: the short and the middle job take the
// V100s, on which they have least time left, the gang the K80s, and the
// long job waits until the short one departs.
func ExampleSRTF() {
	s, err := baseline.NewSRTF(exampleCluster, exampleTypes, &baseline.SRTFSettings{Round: 360})
	if err != nil {
		fmt.Println(err)
		return
	}
	run(s)
	// Output:
	// round 0: gang on 2 k80, mid on 1 v100, short on 1 v100
	// round 1: gang on 2 k80, mid on 1 v100, short on 1 v100
	// round 2: gang on 2 k80, mid on 1 v100, long on 1 v100
	// round 3: gang on 2 k80, long on 1 v100, mid on 1 v100
}

// Tiresias with one threshold of 1,440 GPU-seconds: jobs start in the
// first queue and run in arrival order, so the short job waits; after two
// rounds on two V100s the gang has 1,440 GPU-seconds, drops to the second
// queue, and waits behind the jobs of the first.
func ExampleTiresias() {
	s, err := baseline.NewTiresias(exampleCluster, exampleTypes, &baseline.TiresiasSettings{Round: 360, Thresholds: []float64{1440}})
	if err != nil {
		fmt.Println(err)
		return
	}
	run(s)
	// Output:
	// round 0: gang on 2 v100, long on 1 k80, mid on 1 k80
	// round 1: gang on 2 v100, long on 1 k80, mid on 1 k80
	// round 2: long on 1 v100, mid on 1 v100, short on 1 k80
	// round 3: long on 1 v100, mid on 1 v100, short on 1 k80
}

// Gandiva time-slices when jobs outnumber GPUs: each round, the job that
// waited runs first, and one that ran waits.
func ExampleGandiva() {
	s, err := baseline.NewGandiva(exampleCluster, exampleTypes, &baseline.GandivaSettings{Round: 360})
	if err != nil {
		fmt.Println(err)
		return
	}
	run(s)
	// Output:
	// round 0: gang on 2 v100, long on 1 k80, mid on 1 k80
	// round 1: gang on 2 k80, long on 1 v100, short on 1 v100
	// round 2: gang on 2 k80, long on 1 v100, mid on 1 v100
	// round 3: gang on 2 k80, long on 1 v100, short on 1 v100
}

// SLAQ runs the jobs whose normalised loss would fall most per GPU: with
// the default curve, new and short jobs first; the gang, whose loss falls
// least per GPU, waits in the first round.
func ExampleSLAQ() {
	s, err := baseline.NewSLAQ(exampleCluster, exampleTypes, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	run(s)
	// Output:
	// round 0: long on 1 k80, mid on 1 v100, short on 1 v100
	// round 1: long on 1 k80, gang on 2 v100, mid on 1 k80
	// round 2: gang on 2 k80, long on 1 v100, mid on 1 v100
	// round 3: long on 1 v100, mid on 1 v100, short on 1 k80
}

// Optimus runs jobs that never ran first, in arrival order; then GPUs go to
// the jobs whose remaining time would fall most per GPU: in round 1 the
// long job moves to a V100, and the gang, already at its best speed,
// waits.
func ExampleOptimus() {
	s, err := baseline.NewOptimus(exampleCluster, exampleTypes, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	run(s)
	// Output:
	// round 0: gang on 2 v100, long on 1 k80, mid on 1 k80
	// round 1: mid on 1 k80, long on 1 v100, short on 1 v100
	// round 2: long on 1 v100, mid on 1 v100, short on 1 k80
	// round 3: long on 1 v100, mid on 1 v100, gang on 2 k80
}
