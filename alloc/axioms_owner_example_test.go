package alloc_test

import (
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// ExampleAllocation_ByOwner_problem holds an allocation of jobs to sharing
// incentive per tenant, from a Problem as ByOwner's doc does: tenant a
// runs two jobs, tenant b one.
func ExampleAllocation_ByOwner_problem() {
	c, _ := alloc.NewCapacity([]topology.GPUType{"k80", "v100"}, []float64{2, 2})
	tenants := []alloc.Tenant{{ID: "a", Weight: 1}, {ID: "b", Weight: 1}}
	p, err := alloc.NewJobProblem(c, tenants, []alloc.Job{
		{ID: "a1", Owner: "a", Gang: 1, Weight: 1, Rates: []float64{1, 4}},
		{ID: "a2", Owner: "a", Gang: 1, Weight: 1, Rates: []float64{1, 2}},
		{ID: "b1", Owner: "b", Gang: 1, Weight: 1, Rates: []float64{1, 3}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	a := alloc.NewAllocation(p.JobIDs(), c)
	a.GPUs[0] = []float64{0, 1} // a1
	a.GPUs[1] = []float64{1, 0} // a2
	a.GPUs[2] = []float64{1, 1} // b1

	owned, err := a.ByOwner(p.Jobs, p.Tenants)
	if err != nil {
		fmt.Println(err)
		return
	}
	jobVals := make([]alloc.Linear, len(p.Jobs))
	for i, v := range p.Valuations() {
		jobVals[i] = v.(alloc.Linear)
	}
	vals, err := alloc.OwnerValuations(p.Jobs, p.Tenants, jobVals)
	if err != nil {
		fmt.Println(err)
		return
	}
	si, err := alloc.SharingIncentive(owned, p.Capacity, vals, alloc.OwnerWeights(p.Tenants))
	if err != nil {
		fmt.Println(err)
		return
	}
	for u, row := range owned.Rows {
		fmt.Printf("%s holds %v, worth %.3g (equal share %.3g)\n", row, owned.GPUs[u], si.Own[u], si.Share[u])
	}
	fmt.Println("sharing incentive:", si.Holds)
	// Output:
	// a holds [1 1], worth 5 (equal share 5)
	// b holds [1 1], worth 4 (equal share 4)
	// sharing incentive: true
}
