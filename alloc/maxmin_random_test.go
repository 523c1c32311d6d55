package alloc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/topology"
)

// randomMaxMinProblem is the instance family of LP-NOTES.md: lognormal base
// throughput, speedups 1 to 10 across types (all rows distinct), gangs 1
// (70%), 2-4 (25%) or 8 (5%), weights 1 or 2, about half as many GPUs as
// jobs.
func randomMaxMinProblem(t fataler, jobs, types int, seed uint64) *Problem {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	names := make([]topology.GPUType, types)
	count := make([]float64, types)
	for k := range types {
		names[k] = topology.GPUType(fmt.Sprintf("gpu%d", k))
		count[k] = 1
	}
	for range max(types, jobs/2) - types {
		count[r.IntN(types)]++
	}
	tput := make([][]float64, jobs)
	gang := make([]int, jobs)
	weight := make([]float64, jobs)
	for m := range jobs {
		base := math.Exp(r.NormFloat64())
		tput[m] = make([]float64, types)
		for k := range types {
			s := 1.0
			if k > 0 {
				s = 1 + 9*r.Float64()
			}
			tput[m][k] = base * s
		}
		switch u := r.Float64(); {
		case u < 0.70:
			gang[m] = 1
		case u < 0.95:
			gang[m] = 2 + r.IntN(3)
		default:
			gang[m] = 8
		}
		weight[m] = float64(1 + r.IntN(2))
	}
	return mmProblem(t, names, count, tput, gang, weight)
}

// gavelWorkload draws jobs from Gavel's 26 measured job types and their
// scale factors (simulation_throughputs.json) on K80, P100 and V100, with
// weights 1 or 2, and about half as many GPUs as jobs, split 1:1:1 as in
// Gavel's simulated clusters. Jobs of one type, scale and weight are
// interchangeable.
func gavelWorkload(t testing.TB, jobs int, seed uint64) *Problem {
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	gpus := []string{"k80", "p100", "v100"}
	var rows [][]float64
	var scales []int
	for _, jt := range tp.JobTypes() {
		row := make([]float64, len(gpus))
		ok := true
		for k, g := range gpus {
			row[k], ok = tp.Isolated(g, jt)
			if !ok {
				break
			}
		}
		if ok && row[0]+row[1]+row[2] > 0 {
			rows = append(rows, row)
			scales = append(scales, jt.Scale)
		}
	}
	r := rand.New(rand.NewPCG(seed, 1))
	tput := make([][]float64, jobs)
	gang := make([]int, jobs)
	weight := make([]float64, jobs)
	for m := range jobs {
		i := r.IntN(len(rows))
		tput[m], gang[m] = rows[i], scales[i]
		weight[m] = float64(1 + r.IntN(2))
	}
	per := math.Max(1, math.Round(float64(jobs)/6))
	types := []topology.GPUType{"k80", "p100", "v100"}
	return mmProblem(t, types, []float64{per, per, per}, tput, gang, weight)
}

// checkLevelsAgree solves p with both methods and compares the levels.
func checkLevelsAgree(t *testing.T, p *Problem) {
	t.Helper()
	lv, _, err := maxMinProblem(p, false)
	if err != nil {
		t.Fatal(err)
	}
	full, err := solveLevel(context.Background(), lv, nil, FullLP, nil)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := solveLevel(context.Background(), lv, nil, Decomposed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(dec.t-full.t) > 1e-6*full.t {
		t.Errorf("level: decomposed %v, full LP %v (relative gap %.3g)", dec.t, full.t, math.Abs(dec.t-full.t)/full.t)
	}
	a, err := MaxMin{}.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Validate(p.Capacity); err != nil {
		t.Fatal(err)
	}
	if got := minOf(normalisedValues(t, p, a)); math.Abs(got-full.t) > 1e-6*full.t {
		t.Errorf("allocation's level %v, full LP %v", got, full.t)
	}
}

func TestMaxMinDecomposedMatchesFullLP(t *testing.T) {
	sizes := [][2]int{{3, 2}, {8, 3}, {12, 4}, {64, 3}, {200, 8}, {500, 3}}
	for _, sz := range sizes {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%dx%d/seed%d", sz[0], sz[1], seed), func(t *testing.T) {
				checkLevelsAgree(t, randomMaxMinProblem(t, sz[0], sz[1], seed))
			})
		}
	}
}

func TestMaxMinGavelWorkloadMatchesFullLP(t *testing.T) {
	const jobs = 600
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkLevelsAgree(t, gavelWorkload(t, jobs, seed))
		})
	}
}
