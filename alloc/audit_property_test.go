package alloc

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// genAuditProblem draws a problem of 6 to maxJobs jobs over the three
// types of robustProblem (so that everyPolicy's co-located pairs exist):
// rates spread over two orders of magnitude on a grid of 1/16 in log
// space (equal or at least 6% apart: rates equal to 8 digits but not
// exactly make the LPs ill-conditioned, which is the LP backends' own
// concern and lp's tests'), some zero off the
// first type, gangs of 1 to 4 (1 or 2 for the six jobs everyPolicy pairs), weights 1 to 3, and 2 to 5 tenants (Hierarchical{FIFO: u1} needs u1).
func genAuditProblem(maxJobs int) *rapid.Generator[*Problem] {
	return rapid.Custom(func(t *rapid.T) *Problem {
		n := rapid.IntRange(6, maxJobs).Draw(t, "jobs")
		nt := rapid.IntRange(2, 5).Draw(t, "tenants")
		c := Capacity{Types: []topology.GPUType{"k80", "p100", "v100"}, Count: make([]float64, 3)}
		for k := range c.Count {
			c.Count[k] = float64(rapid.IntRange(1, 2*n).Draw(t, "count"))
		}
		tenants := make([]Tenant, nt)
		for u := range tenants {
			tenants[u] = Tenant{ID: TenantID(fmt.Sprintf("u%d", u)), Weight: float64(rapid.IntRange(1, 3).Draw(t, "tenant weight"))}
		}
		jobs := make([]Job, n)
		for i := range jobs {
			rates := make([]float64, 3)
			for k := range rates {
				rates[k] = math.Exp(float64(rapid.IntRange(-36, 36).Draw(t, "log rate")) / 16)
				if k > 0 && rapid.IntRange(0, 5).Draw(t, "zero") == 0 {
					rates[k] = 0
				}
			}
			gang := rapid.IntRange(1, 4).Draw(t, "gang")
			if i < 6 {
				gang = 1 + i%2 // everyPolicy co-locates j0 with j2 and j3 with j5
			}
			jobs[i] = Job{
				ID:     JobID(fmt.Sprintf("j%d", i)),
				Owner:  tenants[rapid.IntRange(0, nt-1).Draw(t, "owner")].ID,
				Gang:   gang,
				Weight: float64(rapid.IntRange(1, 3).Draw(t, "weight")),
				Rates:  rates,
			}
		}
		p, err := NewJobProblem(c, tenants, jobs)
		if err != nil {
			t.Fatal(err)
		}
		return p
	})
}

// TestPropertyAuditEveryPolicy: Audit succeeds on every allocation any
// policy returns, job by job (Pareto rows capped at the gang, as the CLI
// audits) and user by user. Before the Pareto LP was scaled, its check
// failed with lp.ErrViolation on an ordinary 40-job instance, so the CLI
// printed no result at all.
func TestPropertyAuditEveryPolicy(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(t *rapid.T) {
		p := genAuditProblem(24).Draw(t, "problem")
		caps := make([]float64, len(p.Jobs))
		weights := make([]float64, len(p.Jobs))
		for i, j := range p.Jobs {
			caps[i], weights[i] = float64(j.Gang), j.Weight
		}
		lin, _ := asLinear(p.Valuations())
		vals, err := OwnerValuations(p.Jobs, p.Tenants, lin)
		if err != nil {
			t.Fatal(err)
		}
		for _, pol := range everyPolicy(p, 1) {
			a, err := pol.Allocate(ctx, p)
			if err != nil {
				t.Fatalf("%s: %v", pol.Name(), err)
			}
			if _, err := Audit(ctx, a, p.Capacity, p.Valuations(), weights, &AuditSettings{Pareto: &ParetoSettings{RowCap: caps}}); err != nil {
				t.Fatalf("%s: job-level Audit: %v", pol.Name(), err)
			}
			owned, err := a.ByOwner(p.Jobs, p.Tenants)
			if err != nil {
				t.Fatalf("%s: ByOwner: %v", pol.Name(), err)
			}
			if _, err := Audit(ctx, owned, p.Capacity, vals, OwnerWeights(p.Tenants), nil); err != nil {
				t.Fatalf("%s: user-level Audit: %v", pol.Name(), err)
			}
		}
	})
}
