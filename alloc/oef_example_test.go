package alloc_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// oefExample is OEF's expression (6): two tenants on one slow and one fast
// GPU, speedups <1, 2> and <1, 5>. extra adds jobs (owner, rates).
func oefExample(weight2 float64, extra ...alloc.Job) *alloc.Problem {
	types := []topology.GPUType{"RTX3070", "RTX3090"}
	c, _ := alloc.NewCapacity(types, []float64{1, 1})
	users := []alloc.Tenant{{ID: "u1", Weight: 1}, {ID: "u2", Weight: weight2}}
	jobs := append([]alloc.Job{{ID: "vgg", Owner: "u1", Gang: 1, Weight: 1}, {ID: "lstm", Owner: "u2", Gang: 1, Weight: 1}}, extra...)
	rates := [][]float64{{10, 20}, {4, 20}, {10, 30}}[:len(jobs)] // steps/s
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = string(j.ID)
	}
	tp, _ := speedup.New(ids, types, rates)
	p, err := alloc.NewProblem(c, users, jobs, tp)
	if err != nil {
		panic(err)
	}
	return p
}

func printOEF(a *alloc.Allocation, err error) {
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, r := range a.Rows {
		fmt.Printf("%s: RTX3070 %.3g, RTX3090 %.3g\n", r, a.GPUs[i][0]+0, a.GPUs[i][1]+0)
	}
}

// Non-cooperative OEF equalises normalised throughput: vgg gets
// 1 + 2·4/7 = 15/7 slow-GPU equivalents, lstm 5·3/7 = 15/7.
func ExampleOEF() {
	printOEF(alloc.OEF{Mode: alloc.NonCooperative}.Allocate(context.Background(), oefExample(1)))
	// Output:
	// vgg: RTX3070 1, RTX3090 0.571
	// lstm: RTX3070 0, RTX3090 0.429
}

// Cooperative OEF is expression (6): the most efficient envy-free
// allocation, total 1.5 + 3.75 = 5.25.
func ExampleOEF_cooperative() {
	printOEF(alloc.OEF{Mode: alloc.Cooperative}.Allocate(context.Background(), oefExample(1)))
	// Output:
	// vgg: RTX3070 1, RTX3090 0.25
	// lstm: RTX3070 0, RTX3090 0.75
}

// Weighted OEF (§4.2.3): u2 of weight 2 counts as two copies of itself and
// gets twice u1's normalised throughput, 10/3 against 5/3.
func ExampleOEF_weighted() {
	printOEF(alloc.OEF{Mode: alloc.NonCooperative}.Allocate(context.Background(), oefExample(2)))
	// Output:
	// vgg: RTX3070 1, RTX3090 0.333
	// lstm: RTX3070 0, RTX3090 0.667
}

// Several job types (§4.2.4): u1 adds a job of speedup <1, 3>. Each of u1's
// job types is a virtual user of weight 1/2, so u1 as a whole stays level
// with u2: 45/37 + 45/37 = 90/37 each.
func ExampleOEF_jobTypes() {
	p := oefExample(1, alloc.Job{ID: "resnet", Owner: "u1", Gang: 1, Weight: 1})
	printOEF(alloc.OEF{Mode: alloc.NonCooperative}.Allocate(context.Background(), p))
	// Output:
	// vgg: RTX3070 1, RTX3090 0.108
	// lstm: RTX3070 0, RTX3090 0.486
	// resnet: RTX3070 0, RTX3090 0.405
}

// Demand caps: on four RTX3070s and two RTX3090s, u1 runs one 1-GPU job
// and u2 four. Without caps non-cooperative OEF gives u1 more than the one
// GPU its job can use; with them u1 holds one GPU, a whole RTX3090 (level
// 2, the most one GPU gives it), and u2 the rest (level 4 + 5 = 9).
func ExampleOEF_demandCaps() {
	types := []topology.GPUType{"RTX3070", "RTX3090"}
	c, _ := alloc.NewCapacity(types, []float64{4, 2})
	users := []alloc.Tenant{{ID: "u1", Weight: 1}, {ID: "u2", Weight: 1}}
	jobs := []alloc.Job{{ID: "vgg", Owner: "u1", Gang: 1, Weight: 1, Rates: []float64{10, 20}}}
	for _, id := range []alloc.JobID{"lstm1", "lstm2", "lstm3", "lstm4"} {
		jobs = append(jobs, alloc.Job{ID: id, Owner: "u2", Gang: 1, Weight: 1, Rates: []float64{4, 20}})
	}
	p, err := alloc.NewJobProblem(c, users, jobs)
	if err != nil {
		panic(err)
	}
	for _, capped := range []bool{false, true} {
		a, err := alloc.OEF{Mode: alloc.NonCooperative, DemandCaps: capped}.Allocate(context.Background(), p)
		if err != nil {
			panic(err)
		}
		fmt.Printf("caps %v: vgg RTX3070 %.3g, RTX3090 %.3g\n", capped, a.GPUs[0][0]+0, a.GPUs[0][1]+0)
	}
	// Output:
	// caps false: vgg RTX3070 4, RTX3090 0.857
	// caps true: vgg RTX3070 0, RTX3090 1
}

// Declared job types (§4.2.4): u1 declares its two jobs, of speedups
// <1, 2> and <1, 3>, one type, so they form one virtual user of speedup
// <1, 2.5> and weight 1, not two of weight 1/2: 1 + 2.5·8/15 = 5·7/15.
func ExampleOEF_declaredJobTypes() {
	p := oefExample(1, alloc.Job{ID: "resnet", Owner: "u1", Gang: 1, Weight: 1})
	printOEF(alloc.OEF{Mode: alloc.NonCooperative, JobTypes: map[alloc.JobID]string{"vgg": "cnn", "resnet": "cnn"}}.Allocate(context.Background(), p))
	// Output:
	// vgg: RTX3070 0.5, RTX3090 0.267
	// lstm: RTX3070 0, RTX3090 0.467
	// resnet: RTX3070 0.5, RTX3090 0.267
}

// ExampleOEF_AllocateCertified checks cooperative OEF's certificate on
// expression (6): no tenant envies the other, and the dual bound equals
// the throughput, so no envy-free allocation does better.
func ExampleOEF_AllocateCertified() {
	pol := alloc.OEF{Mode: alloc.Cooperative}
	a, cert, err := pol.AllocateCertified(context.Background(), oefExample(1))
	printOEF(a, err)
	fmt.Printf("throughput %.4g, bound %.4g, envy-free: %v\n", cert.Throughput, cert.Bound, cert.Envy <= 1e-6)
	// Output:
	// vgg: RTX3070 1, RTX3090 0.25
	// lstm: RTX3070 0, RTX3090 0.75
	// throughput 5.25, bound 5.25, envy-free: true
}

// A scheduler that re-solves cooperative OEF as jobs come and go passes
// the binding envy rows of one solve to the next (OEFSettings.WarmRows),
// and the basis its LP ended on (OEFSettings.WarmBasis, with the pure-Go
// simplex): here vgg's row against lstm holds expression (6)'s throughput
// down, and seeds the solve after resnet arrives. The result is the same
// exact, certified optimum as without them; at scale it comes several
// times to twenty times sooner (docs/benchmarks/oef.md).
func ExampleOEFSettings_warmRows() {
	pol := alloc.OEF{Mode: alloc.Cooperative}
	_, cert, err := pol.AllocateCertified(context.Background(), oefExample(1))
	if err != nil {
		panic(err)
	}
	fmt.Println("binding:", cert.Binding)
	pol.Settings = &alloc.OEFSettings{WarmRows: cert.Binding, WarmBasis: cert.Basis}
	next := oefExample(1, alloc.Job{ID: "resnet", Owner: "u1", Gang: 1, Weight: 1})
	a, cert, err := pol.AllocateCertified(context.Background(), next)
	printOEF(a, err)
	fmt.Printf("throughput %.4g, bound %.4g\n", cert.Throughput, cert.Bound)
	// Output:
	// binding: [{vgg lstm}]
	// vgg: RTX3070 0.786, RTX3090 0
	// lstm: RTX3070 0, RTX3090 0.714
	// resnet: RTX3070 0.214, RTX3090 0.286
	// throughput 5.429, bound 5.429
}
