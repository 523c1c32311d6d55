package alloc_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"pgregory.net/rapid"
)

// TestOEFWarmRowsExact: cooperative OEF seeded with warm rows, the binding
// rows of an earlier solve of the same users with some rows redrawn, mixed
// with rows that name unknown jobs or random pairs, and with or without
// that solve's basis, mixed with shares that name unknown jobs or GPU
// types, returns a certified result with the optimal throughput of a cold
// solve. The basis a solve reports names the problem's jobs, one share
// for each tight row and full GPU type (more with caps, whose cap rows
// and floors it leaves out).
func TestOEFWarmRowsExact(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := genOEFCase(true).Draw(rt, "case")
		p := c.problem(rt)
		caps := rapid.Bool().Draw(rt, "caps")
		coop := alloc.OEF{Mode: alloc.Cooperative, DemandCaps: caps}
		_, first, err := coop.AllocateCertified(context.Background(), p)
		if err != nil {
			rt.Fatal(err)
		}
		for _, r := range first.Binding {
			if !slices.ContainsFunc(p.Jobs, func(j alloc.Job) bool { return j.ID == r.Envier }) ||
				!slices.ContainsFunc(p.Jobs, func(j alloc.Job) bool { return j.ID == r.Envied }) {
				rt.Fatalf("binding row %v names a job not in the problem", r)
			}
		}
		b := first.Basis
		if n := len(b.Tight) + len(b.Full); len(b.Shares) < n || !caps && len(b.Shares) != n {
			rt.Fatalf("basis of %d shares, %d tight rows and %d full types", len(b.Shares), len(b.Tight), len(b.Full))
		}
		for _, s := range b.Shares {
			if !slices.ContainsFunc(p.Jobs, func(j alloc.Job) bool { return j.ID == s.Job }) {
				rt.Fatalf("basis share %v names a job not in the problem", s)
			}
		}
		// Redraw some users' rows, as a scheduler's next solve would see.
		next := c
		next.rates = slices.Clone(c.rates)
		for i := range next.rates {
			if rapid.IntRange(0, 3).Draw(rt, "redraw") == 0 {
				row := slices.Clone(next.rates[i])
				for k := 1; k < len(row); k++ {
					row[k] = row[0] * rapid.Float64Range(1, 10).Draw(rt, "speedup")
				}
				next.rates[i] = row
			}
		}
		q := next.problem(rt)
		warm := slices.Clone(first.Binding)
		for range rapid.IntRange(0, 6).Draw(rt, "junk") {
			pick := func(label string) alloc.JobID {
				if i := rapid.IntRange(-1, len(q.Jobs)-1).Draw(rt, label); i >= 0 {
					return q.Jobs[i].ID
				}
				return "departed"
			}
			warm = append(warm, alloc.OEFEnvyRow{Envier: pick("envier"), Envied: pick("envied")})
		}
		_, cold, err := coop.AllocateCertified(context.Background(), q)
		if err != nil {
			rt.Fatal(err)
		}
		set := &alloc.OEFSettings{WarmRows: warm}
		if rapid.Bool().Draw(rt, "basis") {
			set.WarmBasis = first.Basis
			set.WarmBasis.Shares = slices.Clone(set.WarmBasis.Shares)
			for range rapid.IntRange(0, 3).Draw(rt, "junk shares") {
				set.WarmBasis.Shares = append(set.WarmBasis.Shares,
					alloc.OEFShare{Job: q.Jobs[rapid.IntRange(0, len(q.Jobs)-1).Draw(rt, "job")].ID, Type: q.Capacity.Types[0]},
					alloc.OEFShare{Job: "departed", Type: q.Capacity.Types[0]},
					alloc.OEFShare{Job: q.Jobs[0].ID, Type: "unknown"})
			}
		}
		seeded := alloc.OEF{Mode: alloc.Cooperative, DemandCaps: caps, Settings: set}
		a, got, err := seeded.AllocateCertified(context.Background(), q)
		if err != nil {
			rt.Fatalf("with warm rows: %v", err)
		}
		if err := a.Validate(q.Capacity); err != nil {
			rt.Fatal(err)
		}
		if math.Abs(got.Throughput-cold.Throughput) > 1e-6*max(1, cold.Throughput) {
			rt.Fatalf("throughput %v with warm rows, %v without", got.Throughput, cold.Throughput)
		}
		if got.Envy > 1e-6 || got.Gap() > 1e-5 {
			rt.Fatalf("with warm rows: envy %v, gap %v", got.Envy, got.Gap())
		}
	})
}

// TestOEFBindingRowsBind: on three users where the fastest-per-GPU user
// would take everything, envy-freeness binds, and Binding names the rows
// that hold the throughput down.
func TestOEFBindingRowsBind(t *testing.T) {
	p := oefUsersProblem(t, []float64{2, 2, 2}, nil, [][]float64{{1, 4, 8}, {1, 2, 3}, {1, 3, 9}})
	_, cert, err := alloc.OEF{Mode: alloc.Cooperative}.AllocateCertified(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.Binding) == 0 {
		t.Fatalf("no binding rows; certificate %+v", cert)
	}
	// Without envy rows the LP would give each type to its best user by
	// speedup, a total the envy-free optimum must fall short of.
	if free := 2*1.0 + 2*4 + 2*9; cert.Bound >= free {
		t.Fatalf("bound %v: envy-freeness did not bind (unconstrained optimum %v)", cert.Bound, free)
	}
}
