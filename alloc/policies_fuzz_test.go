package alloc

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/internal/fuzzdata"
	"github.com/gpufair/gpufair/lp"
	"github.com/gpufair/gpufair/topology"
)

// FuzzPolicies builds small problems from arbitrary numbers and runs every
// policy on them. No policy may panic or kill the process; each returns
// an allocation within capacity or an error that is an *gpufair.InputError
// or wraps an lp sentinel.
func FuzzPolicies(f *testing.F) {
	f.Add([]byte{2, 3, 32, 48, 1, 16, 32, 48, 0, 20, 40, 8, 1, 16, 16})
	f.Add(append([]byte{1, 1, 0}, fuzzdata.Bytes(1e308, 1e-300, 1e300)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		nt, nj := 1+r.Int(3), 1+r.Int(4)
		c := Capacity{Count: r.Floats(nt)}
		for k := range nt {
			c.Types = append(c.Types, topology.GPUType(fmt.Sprint("t", k)))
		}
		tenants := []Tenant{{ID: "u0", Weight: 1 + r.Number()}, {ID: "u1", Weight: 1}}
		jobs := make([]Job, nj)
		for i := range jobs {
			jobs[i] = Job{ID: JobID(fmt.Sprint("j", i)), Owner: tenants[i%2].ID, Gang: 1 + r.Int(3), Weight: 1 + r.Number(), Rates: r.Floats(nt)}
		}
		p, err := NewJobProblem(c, tenants, jobs)
		if err != nil {
			return
		}
		for _, pol := range everyPolicy(p, 1) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			a, err := pol.Allocate(ctx, p)
			cancel()
			if err != nil {
				var in *gpufair.InputError
				var slo *SLOError
				if !errors.As(err, &in) && !errors.As(err, &slo) && !wrapsLP(err) {
					t.Fatalf("%s: error %v is neither an input error nor an lp error", pol.Name(), err)
				}
				continue
			}
			if err := a.Validate(p.Capacity); err != nil {
				t.Fatalf("%s: allocation outside capacity: %v", pol.Name(), err)
			}
		}
	})
}

func wrapsLP(err error) bool {
	for _, e := range []error{lp.ErrInvalidModel, lp.ErrInfeasible, lp.ErrUnbounded, lp.ErrNumerical, lp.ErrIterationLimit, lp.ErrTimeLimit, lp.ErrViolation} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
