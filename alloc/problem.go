package alloc

import (
	"context"
	"math"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/speedup"
)

// Problem is the input of a fractional allocation policy: a capacity, the
// tenants sharing it, their jobs, and each job's throughput on each GPU
// type.
//
// Throughputs.At(i, k) is the rate of Jobs[i] as a whole when it runs on
// Jobs[i].Gang GPUs of Capacity.Types[k] (Gavel's convention: a job at its
// scale factor). Counts are capacity, not slots, so no policy checks that a
// gang fits a type: give a job rate 0 on a type whose GPUs cannot hold its
// gang at once, as stride.Gavel does from the healthy GPUs, or the policies
// give it GPUs it cannot use. Row i
// of Throughputs is labelled string(Jobs[i].ID) and its columns are
// Capacity.Types, in order. Tenants may be nil for the job-level policies,
// which then ignore Job.Owner; the tenant-level policies (OEF,
// Hierarchical) need them.
//
// A Problem is read, never modified, by the policies.
type Problem struct {
	Capacity    Capacity        `json:"capacity"`
	Tenants     []Tenant        `json:"tenants,omitempty"`
	Jobs        []Job           `json:"jobs"`
	Throughputs *speedup.Matrix `json:"throughputs"`
}

// NewProblem returns a validated Problem. It does not copy its arguments.
func NewProblem(c Capacity, tenants []Tenant, jobs []Job, tp *speedup.Matrix) (*Problem, error) {
	p := &Problem{Capacity: c, Tenants: tenants, Jobs: jobs, Throughputs: tp}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// Validate checks the capacity, the tenants (when not nil), the jobs and
// their owners, and that the throughput matrix has one row per job,
// labelled by its ID in order, over the capacity's types in order. A row of zeros
// is valid here (a job that fits no GPU type); policies that cannot serve
// such a job say so. A nil Problem is an *gpufair.InputError wrapping
// gpufair.ErrEmpty.
func (p *Problem) Validate() error {
	if p == nil {
		return gpufair.Invalid("Problem", "", gpufair.ErrEmpty, "nil problem")
	}
	if err := p.Capacity.Validate(); err != nil {
		return err
	}
	if p.Tenants != nil {
		if err := ValidateTenants(p.Tenants); err != nil {
			return err
		}
	}
	if err := ValidateJobs(p.Jobs, p.Tenants); err != nil {
		return err
	}
	if p.Throughputs == nil {
		return gpufair.Invalid("Throughputs", "", gpufair.ErrEmpty, "no throughput matrix")
	}
	rows, types := p.Throughputs.Dims()
	if rows != len(p.Jobs) {
		return gpufair.Invalid("Throughputs", "", gpufair.ErrShape, "%d rows for %d jobs", rows, len(p.Jobs))
	}
	if types != len(p.Capacity.Types) {
		return gpufair.Invalid("Throughputs", "", gpufair.ErrShape, "%d GPU types for a cluster of %d", types, len(p.Capacity.Types))
	}
	for k, t := range p.Throughputs.Types() {
		if t != p.Capacity.Types[k] {
			return gpufair.Invalid("Throughputs", string(t), gpufair.ErrShape, "column %d is %q, the cluster's is %q", k, t, p.Capacity.Types[k])
		}
	}
	if err := checkRateSpread(p.Throughputs.Rows(), p.Throughputs.Values()); err != nil {
		return err
	}
	for i, r := range p.Throughputs.Rows() {
		if r != string(p.Jobs[i].ID) {
			return gpufair.Invalid("Throughputs", r, gpufair.ErrShape, "row %d is %q, job %d is %q", i, r, i, p.Jobs[i].ID)
		}
		if rates := p.Jobs[i].Rates; rates != nil {
			if len(rates) != types {
				return gpufair.Invalid("Jobs.Rates", r, gpufair.ErrShape, "%d rates for %d GPU types", len(rates), types)
			}
			for k, x := range rates {
				if x != p.Throughputs.At(i, k) {
					return gpufair.Invalid("Jobs.Rates", r, gpufair.ErrValue, "rate %v on %q, the throughput matrix has %v", x, p.Capacity.Types[k], p.Throughputs.At(i, k))
				}
			}
		}
	}
	return nil
}

// MaxRateSpread is the largest ratio between the largest rate of a
// Problem and any positive rate that Validate accepts (give or take a
// relative 1e-9, spreadSlack). Policies solve LPs
// whose coefficients are rates relative to the largest; beyond a spread of
// 1e12 a double-precision simplex cannot tell the small ones from zero.
const MaxRateSpread = 1e12

// BelowRateSpread reports whether rate r is positive and more than
// MaxRateSpread times below top, the largest rate beside it: a pair of
// rates that no policy takes together.
func BelowRateSpread(r, top float64) bool { return r > 0 && r*MaxRateSpread < top }

// spreadSlack is the relative margin by which Validate's rates may exceed
// MaxRateSpread: far above rounding, far below anything a simplex notices.
const spreadSlack = 1e-9

// checkRateSpread reports the first positive rate more than MaxRateSpread
// times below the largest.
func checkRateSpread(rows []string, rates [][]float64) error {
	top := 0.0
	for _, row := range rates {
		for _, r := range row {
			top = math.Max(top, r)
		}
	}
	for i, row := range rates {
		for _, r := range row {
			// The slack keeps valid the problems that policies derive
			// from a valid one (space sharing's normalised rates rounded
			// 1e-12 of the largest to 9.999999999994796e-13).
			if BelowRateSpread(r*(1+spreadSlack), top) {
				return gpufair.Invalid("Throughputs", rows[i], gpufair.ErrValue, "rate %v is more than %v times below the largest rate, %v", r, MaxRateSpread, top)
			}
		}
	}
	return nil
}

// NewJobProblem returns a validated Problem whose throughput matrix is
// built from the jobs' own Rates, which follow c.Types. Every job must have
// one rate per GPU type of c. It copies the rates, not jobs or tenants.
// Errors are those of Validate; an invalid c is reported before the jobs.
func NewJobProblem(c Capacity, tenants []Tenant, jobs []Job) (*Problem, error) {
	// The rates are measured against c: an empty capacity is the fault,
	// not the jobs' three rates for its zero types.
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := ValidateJobs(jobs, tenants); err != nil {
		return nil, err
	}
	rows := make([]string, len(jobs))
	rates := make([][]float64, len(jobs))
	for i, j := range jobs {
		if len(j.Rates) != len(c.Types) {
			return nil, gpufair.Invalid("Jobs.Rates", string(j.ID), gpufair.ErrShape, "%d rates for %d GPU types", len(j.Rates), len(c.Types))
		}
		rows[i], rates[i] = string(j.ID), j.Rates
	}
	tp, err := speedup.New(rows, c.Types, rates)
	if err != nil {
		return nil, err
	}
	return NewProblem(c, tenants, jobs, tp)
}

// JobIDs returns the jobs' IDs as Allocation row labels, in order, nil for
// a nil Problem.
func (p *Problem) JobIDs() []string {
	if p == nil {
		return nil
	}
	ids := make([]string, len(p.Jobs))
	for i, j := range p.Jobs {
		ids[i] = string(j.ID)
	}
	return ids
}

// Valuations returns each job's effective-throughput valuation over GPUs
// (the units of Allocation): a job holding GPUs[k] GPUs of type k on
// average runs a fraction GPUs[k]/Gang of the time there, so its value per
// GPU is Throughputs.At(i, k)/Gang. It returns nil for a nil Problem and
// one whose throughput matrix is missing or not one row per job; for
// other Problems that Validate refuses, the values are not meaningful.
func (p *Problem) Valuations() []Valuation {
	if p == nil || p.Throughputs == nil {
		return nil
	}
	if rows, _ := p.Throughputs.Dims(); rows != len(p.Jobs) {
		return nil
	}
	v := make([]Valuation, len(p.Jobs))
	for i, j := range p.Jobs {
		l := p.Throughputs.Row(i)
		for k := range l {
			l[k] /= float64(j.Gang)
		}
		v[i] = Linear(l)
	}
	return v
}

// A Policy is a fractional allocation policy: it maps a Problem to an
// Allocation with one row per job, labelled by job ID in the order of
// Problem.Jobs, in GPUs of each type averaged over time. Policies are plain
// values that hold their own settings, so callers assemble them freely:
//
//	for _, pol := range []alloc.Policy{alloc.MaxMin{}, alloc.OEF{Mode: alloc.Cooperative}} { ... }
//
// Allocate validates p, returns an *gpufair.InputError for bad input and an error
// wrapping an lp sentinel (lp.ErrInfeasible, ...) when a solve fails. It
// never modifies p, and the same p gives a bit-identical Allocation.
type Policy interface {
	Name() string
	Allocate(ctx context.Context, p *Problem) (*Allocation, error)
}
