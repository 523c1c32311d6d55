package alloc_test

import (
	"context"
	"fmt"
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

// TestOEFWarmBasisAfterDepartures: cooperative OEF warm from the binding
// rows and basis of the solve before, after jobs departed and others
// arrived, returns a certified result with a cold solve's optimal
// throughput, twice in a row, the second from the first warm solve's
// basis (which names its ghosts). The departing job is often the one with
// the most tight rows, whose rows hold its pool together: the one a ghost
// is kept for. With twins, a user runs two jobs of one type, and one may
// depart while the other stays.
func TestOEFWarmBasisAfterDepartures(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := genOEFCaseUpTo(24).Draw(rt, "case")
		type job struct {
			oefJob
			user   string
			weight float64
		}
		jobs := make([]job, len(c.rates))
		for i := range jobs {
			jobs[i] = job{oefJob{rates: c.rates[i], id: alloc.JobID(fmt.Sprintf("j%d", i+1))}, fmt.Sprint(i), c.weight(i)}
		}
		if rapid.Bool().Draw(rt, "twins") {
			// Each user also runs a twin of its job: one virtual user of
			// two jobs, named by the first, which may depart alone.
			for i := range c.rates {
				jobs = append(jobs, job{oefJob{rates: c.rates[i], id: alloc.JobID(fmt.Sprintf("j%db", i+1))}, fmt.Sprint(i), c.weight(i)})
			}
		}
		problem := func() *alloc.Problem {
			js := make([]oefJob, len(jobs))
			var ws []float64
			owner := map[string]int{}
			for i, j := range jobs {
				o, ok := owner[j.user]
				if !ok {
					o = len(ws)
					owner[j.user] = o
					ws = append(ws, j.weight)
				}
				js[i] = j.oefJob
				js[i].owner = o
			}
			return oefProblem(rt, c.count, ws, js)
		}
		coop := alloc.OEF{Mode: alloc.Cooperative}
		_, prev, err := coop.AllocateCertified(context.Background(), problem())
		if err != nil {
			rt.Fatal(err)
		}
		for step := range 2 {
			departing := rapid.IntRange(1, max(1, len(jobs)-2)).Draw(rt, "departing")
			for range departing {
				if len(jobs) <= 2 {
					break
				}
				at := rapid.IntRange(0, len(jobs)-1).Draw(rt, "at")
				if rapid.Bool().Draw(rt, "anchor") {
					tight := map[alloc.JobID]int{}
					for _, r := range prev.Basis.Tight {
						tight[r.Envier]++
						tight[r.Envied]++
					}
					for i, j := range jobs {
						if tight[j.id] > tight[jobs[at].id] {
							at = i
						}
					}
				}
				jobs = slices.Delete(jobs, at, at+1)
			}
			for i := range rapid.IntRange(0, 3).Draw(rt, "arriving") {
				j := jobs[rapid.IntRange(0, len(jobs)-1).Draw(rt, "like")]
				rates := slices.Clone(j.rates)
				for k := range rates {
					rates[k] *= rapid.Float64Range(0.98, 1.02).Draw(rt, "noise")
				}
				id := fmt.Sprintf("new%d.%d", step, i)
				jobs = append(jobs, job{oefJob{rates: rates, id: alloc.JobID(id)}, id, j.weight})
			}
			q := problem()
			_, cold, err := coop.AllocateCertified(context.Background(), q)
			if err != nil {
				rt.Fatal(err)
			}
			warm := alloc.OEF{Mode: alloc.Cooperative, Settings: &alloc.OEFSettings{WarmRows: prev.Binding, WarmBasis: prev.Basis}}
			a, got, err := warm.AllocateCertified(context.Background(), q)
			if err != nil {
				rt.Fatalf("step %d, warm: %v", step, err)
			}
			if err := a.Validate(q.Capacity); err != nil {
				rt.Fatal(err)
			}
			if math.Abs(got.Throughput-cold.Throughput) > 1e-6*max(1, cold.Throughput) {
				rt.Fatalf("step %d: throughput %v warm, %v cold", step, got.Throughput, cold.Throughput)
			}
			if got.Envy > 1e-6 || got.Gap() > 1e-5 {
				rt.Fatalf("step %d, warm: envy %v, gap %v", step, got.Envy, got.Gap())
			}
			for _, r := range got.Binding {
				if !slices.ContainsFunc(q.Jobs, func(j alloc.Job) bool { return j.ID == r.Envier }) ||
					!slices.ContainsFunc(q.Jobs, func(j alloc.Job) bool { return j.ID == r.Envied }) {
					rt.Fatalf("step %d: binding row %v names a job not in the problem", step, r)
				}
			}
			prev = got
		}
	})
}
