package stride_test

import (
	"fmt"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
)

// packCluster submits, on two 4-GPU servers, a 4-GPU job of a tenant of 4
// tickets and then n 1-GPU jobs of tenants of 1 ticket each, and returns
// the GPU-quanta used over 120 quanta and each server's jobs.
func packCluster(t *testing.T, pack bool, n int) (used int, perServer [2]int) {
	t.Helper()
	f, err := stride.NewFair(servers(2, 4, "p100"), &stride.Settings{Pack: pack})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddTenant(alloc.Tenant{ID: "big", Weight: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Submit(stride.Submission{ID: "big-0", Owner: "big", Gang: 4}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		u := alloc.TenantID(fmt.Sprintf("small%d", i))
		if err := f.AddTenant(alloc.Tenant{ID: u, Weight: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Submit(stride.Submission{ID: alloc.JobID(u + "-0"), Owner: u, Gang: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for q := 1; q <= 120; q++ {
		p, err := f.Quantum(q)
		if err != nil {
			t.Fatal(err)
		}
		used += p.GPUs()
		f.Rebalance(0.1)
	}
	for l := range 2 {
		perServer[l] = f.Split().Local(l).Len()
	}
	return used, perServer
}

// Section 3.3's case: a 4-GPU gang with fewer than four 1-GPU jobs beside
// it idles GPUs whenever it waits. On two 4-GPU servers, a 4-GPU job of 4
// tickets and eight 1-GPU jobs of one ticket each, placed and rebalanced
// by ticket load alone, end as two beside the gang and six on the other
// server: two GPUs idle every other quantum. Packed, four sit beside the
// gang and no GPU idles. Packing never does worse on this cluster, from 3
// to 10 jobs of 1 GPU; with 5 or fewer it changes nothing, as a type with
// a server not yet subscribed is placed by ticket load.
func TestPackFillsIdleGPUs(t *testing.T) {
	used, where := packCluster(t, false, 8)
	if used != 120*8-120 || where != [2]int{3, 6} {
		t.Errorf("by ticket load: %d GPU-quanta of %d used, jobs per server %v; want 840 and [3 6]", used, 120*8, where)
	}
	used, where = packCluster(t, true, 8)
	if used != 120*8 || where != [2]int{5, 4} {
		t.Errorf("packed: %d GPU-quanta of %d used, jobs per server %v; want all and [5 4]", used, 120*8, where)
	}
	for n := 3; n <= 10; n++ {
		plain, _ := packCluster(t, false, n)
		packed, _ := packCluster(t, true, n)
		if packed < plain || n <= 5 && packed != plain {
			t.Errorf("%d jobs of 1 GPU: %d GPU-quanta used packed, %d by ticket load", n, packed, plain)
		}
	}
}
