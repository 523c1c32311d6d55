package alloc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
)

var oefMethods = []alloc.OEFMethod{alloc.OEFStructured, alloc.OEFFullModel}

// TestOEFPaperExamples checks OEF's worked examples, with both methods.
// Where the optimum is unique (shown in each case's reason) the allocation
// itself is compared; otherwise only its total and feasibility.
func TestOEFPaperExamples(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reason    string
		mode      alloc.OEFMode
		count     []float64
		weights   []float64
		jobs      []oefJob
		wantTotal float64
		want      [][]float64 // per job; nil when the optimum is not unique
	}{{
		name: "expression (6), cooperative",
		reason: "§3.1.1: <1,2> and <1,5> on one GPU of each type give x1 = <1, 1/4>, x2 = <0, 3/4>, total 5.25; " +
			"unique: the total is 3 + 3·x2², and u1's envy row with x1¹ ≤ 1 caps x2² at 3/4",
		mode: alloc.Cooperative, count: []float64{1, 1},
		jobs:      []oefJob{{owner: 0, rates: []float64{1, 2}}, {owner: 1, rates: []float64{1, 5}}},
		wantTotal: 5.25, want: [][]float64{{1, 0.25}, {0, 0.75}},
	}, {
		name: "expression (6) with u1 lying <1,4>, cooperative",
		reason: "§3.1.1: X^l = <1, 3/8>, <0, 5/8> for the reported speedups (total 1 + 1.5 + 3.125); " +
			"u1's true throughput rises from 1.5 to 1.75, so cooperative OEF is not strategy-proof",
		mode: alloc.Cooperative, count: []float64{1, 1},
		jobs:      []oefJob{{owner: 0, rates: []float64{1, 4}}, {owner: 1, rates: []float64{1, 5}}},
		wantTotal: 2.5 + 3.125, want: [][]float64{{1, 0.375}, {0, 0.625}},
	}, {
		name:   "expression (5)'s instance, cooperative",
		reason: "§2.4 and §3.1.1: <1,2>, <1,3>, <1,4>; the most efficient envy-free allocation is X* of expression (2), total 4.5, below (5)'s 5",
		mode:   alloc.Cooperative, count: []float64{1, 1},
		jobs:      []oefJob{{owner: 0, rates: []float64{1, 2}}, {owner: 1, rates: []float64{1, 3}}, {owner: 2, rates: []float64{1, 4}}},
		wantTotal: 4.5, want: [][]float64{{1, 0}, {0, 0.5}, {0, 0.5}},
	}, {
		name:   "expression (5)'s instance, non-cooperative",
		reason: "u1 takes the slow GPU and (t-1)/2 of the fast one, u2 t/3, u3 t/4: t = 18/13 each",
		mode:   alloc.NonCooperative, count: []float64{1, 1},
		jobs:      []oefJob{{owner: 0, rates: []float64{1, 2}}, {owner: 1, rates: []float64{1, 3}}, {owner: 2, rates: []float64{1, 4}}},
		wantTotal: 54.0 / 13, want: [][]float64{{1, 5.0 / 26}, {0, 6.0 / 13}, {0, 9.0 / 26}},
	}, {
		name:   "weighted OEF, §4.2.3",
		reason: "Eq. (6)'s speedups with π2 = 2, non-cooperative: u1 = <1, 1/3>, u2 = <0, 2/3> (two copies of <0, 1/3>), each copy 5/3",
		mode:   alloc.NonCooperative, count: []float64{1, 1}, weights: []float64{1, 2},
		jobs:      []oefJob{{owner: 0, rates: []float64{1, 2}}, {owner: 1, rates: []float64{1, 5}}},
		wantTotal: 5, want: [][]float64{{1, 1.0 / 3}, {0, 2.0 / 3}},
	}, {
		name: "several job types, §4.2.4",
		reason: "u1 runs <1,2> and <1,3> as two virtual users of weight 1/2, u2 <1,5>: the paper's X is " +
			"<1, 4/37>, <0, 15/37>, 2×<0, 9/37> (printed 0.11, 0.41, 0.24), level 45/37 per half-weight copy",
		mode: alloc.NonCooperative, count: []float64{1, 1},
		jobs:      []oefJob{{owner: 0, rates: []float64{1, 2}}, {owner: 0, rates: []float64{1, 3}}, {owner: 1, rates: []float64{1, 5}}},
		wantTotal: 180.0 / 37, want: [][]float64{{1, 4.0 / 37}, {0, 15.0 / 37}, {0, 18.0 / 37}},
	}} {
		for _, method := range oefMethods {
			t.Run(tc.name+"/"+method.String(), func(t *testing.T) {
				p := oefProblem(t, tc.count, tc.weights, tc.jobs)
				a := allocateOEF(t, p, tc.mode, method)
				if got := oefTotal(t, p, a); !oefApprox(got, tc.wantTotal) {
					t.Errorf("%v: total normalised throughput = %v, want %v (%s)", method, got, tc.wantTotal, tc.reason)
				}
				if tc.want == nil {
					return
				}
				if diff := cmp.Diff(tc.want, a.GPUs, cmpopts.EquateApprox(0, oefTol)); diff != "" {
					t.Errorf("%v: allocation mismatch (-want +got) (%s):\n%s", method, tc.reason, diff)
				}
			})
		}
	}
}

// TestOEFMaxEfficiencyExample is expression (5): the most efficient
// allocation reaches 5, but not uniquely (ERRATA.md: the slow GPU may go
// to u1 or u2), so only its total is checked; both OEF modes pay for
// fairness with a lower total.
func TestOEFMaxEfficiencyExample(t *testing.T) {
	s := [][]float64{{1, 2}, {1, 3}, {1, 4}}
	count := []float64{1, 1}
	best := oefMaxThroughput(t, s, count)
	if !oefApprox(best, 5) {
		t.Fatalf("maximum total of expression (5) = %v, want 5", best)
	}
	p := oefUsersProblem(t, count, nil, s)
	for _, mode := range []alloc.OEFMode{alloc.NonCooperative, alloc.Cooperative} {
		if got := oefTotal(t, p, allocateOEF(t, p, mode, alloc.OEFStructured)); !(got < best-oefTol) {
			t.Errorf("OEF %v total = %v, want below the unfair maximum %v", mode, got, best)
		}
	}
}

// TestOEFBadInput checks the typed errors of degenerate input and the
// documented handling of users who own no job.
func TestOEFBadInput(t *testing.T) {
	ok := func() *alloc.Problem {
		return oefUsersProblem(t, []float64{1, 1}, nil, [][]float64{{1, 2}, {1, 5}})
	}
	for _, tc := range []struct {
		name    string
		p       func() *alloc.Problem
		wantErr error
		field   string
	}{
		{"nil users", func() *alloc.Problem { p := ok(); p.Tenants = nil; return p }, gpufair.ErrEmpty, "Tenants"},
		{"all-zero throughput row", func() *alloc.Problem {
			return oefUsersProblem(t, []float64{1, 1}, nil, [][]float64{{1, 2}, {0, 0}})
		}, gpufair.ErrValue, "Throughputs"},
		{"zero GPU count", func() *alloc.Problem { p := ok(); p.Capacity.Count = []float64{1, 0}; return p }, gpufair.ErrValue, "Capacity.Count"},
		{"shape", func() *alloc.Problem { p := ok(); p.Jobs = p.Jobs[:1]; return p }, gpufair.ErrShape, "Throughputs"},
	} {
		for _, mode := range []alloc.OEFMode{alloc.NonCooperative, alloc.Cooperative} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := alloc.OEF{Mode: mode}.Allocate(context.Background(), tc.p())
				var ie *gpufair.InputError
				if !errors.Is(err, tc.wantErr) || !errors.As(err, &ie) || ie.Field != tc.field {
					t.Fatalf("OEF{%v}.Allocate() error = %v, want an *gpufair.InputError on %s wrapping %v", mode, err, tc.field, tc.wantErr)
				}
			})
		}
	}
	t.Run("unknown mode", func(t *testing.T) {
		if _, err := (alloc.OEF{Mode: 7}).Allocate(context.Background(), ok()); err == nil {
			t.Fatal("OEF{Mode: 7}.Allocate() error = nil, want an error")
		}
	})
	t.Run("user without jobs", func(t *testing.T) {
		// u3 owns nothing: it is not a tenant, and the others get what they
		// would get without it.
		p := ok()
		want := allocateOEF(t, p, alloc.Cooperative, alloc.OEFStructured)
		p.Tenants = append(p.Tenants, alloc.Tenant{ID: "u3", Weight: 1})
		got := allocateOEF(t, p, alloc.Cooperative, alloc.OEFStructured)
		if diff := cmp.Diff(want.GPUs, got.GPUs); diff != "" {
			t.Errorf("allocation changed by a user without jobs (-want +got):\n%s", diff)
		}
	})
}

// TestOEFJobsShareTheirUsersBundle checks how a virtual user's bundle is
// split among its jobs: in proportion to Weight·Gang, and the user's total
// does not depend on how many jobs of one type it runs.
func TestOEFJobsShareTheirUsersBundle(t *testing.T) {
	one := oefUsersProblem(t, []float64{2, 1}, nil, [][]float64{{1, 2}, {1, 5}})
	p := oefProblem(t, []float64{2, 1}, nil, []oefJob{{owner: 0, rates: []float64{1, 2}}, {owner: 0, rates: []float64{2, 4}}, {owner: 1, rates: []float64{1, 5}}})
	p.Jobs[1].Gang, p.Jobs[1].Weight = 2, 1.5 // Weight·Gang 3 against 1
	for _, mode := range []alloc.OEFMode{alloc.NonCooperative, alloc.Cooperative} {
		want := oefUserBundles(one, allocateOEF(t, one, mode, alloc.OEFStructured))
		a := allocateOEF(t, p, mode, alloc.OEFStructured)
		if diff := cmp.Diff(want, oefUserBundles(p, a), cmpopts.EquateApprox(0, oefTol)); diff != "" {
			t.Errorf("OEF %v: user bundles mismatch (-want +got):\n%s", mode, diff)
		}
		for k := range a.Types {
			if !oefApprox(a.GPUs[1][k], 3*a.GPUs[0][k]) {
				t.Errorf("OEF %v: job 2 holds %v of type %d, want 3× job 1's %v", mode, a.GPUs[1][k], k, a.GPUs[0][k])
			}
		}
	}
}
