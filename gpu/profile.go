package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/internal/stat"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// Errors of one profiling run, wrapped by *RunError; test with errors.Is.
var (
	ErrTimeout = errors.New("gpu: workload run timed out")
	ErrRun     = errors.New("gpu: workload run failed")
	ErrNoRate  = errors.New("gpu: workload reported no rate")
)

// ErrProfile reports a profiling request that cannot be run: no workloads,
// no targets, an empty or duplicate name, a workload without a command or
// with an Env entry that is not KEY=value, a target without a UUID, with a
// comma in it (more than one device) or with the UUID of another target, a
// negative Repeats or Timeout.
var ErrProfile = errors.New("gpu: invalid profile request")

// Workload is a program to profile. It runs with CUDA_VISIBLE_DEVICES set to
// one GPU's UUID and reports its rate on standard output (see ParseRate for
// the default protocol).
type Workload struct {
	Name string   // row label in the profile
	Argv []string // program and arguments, run without a shell
	Env  []string // extra "KEY=value" entries for the run
}

// Target is the device on which a GPU type is profiled.
type Target struct {
	Type topology.GPUType
	UUID string
}

// Targets returns one target per GPU type of h: the schedulable device of
// lowest index of each type, in the order of h.Capacity; none for a nil h.
func Targets(h *Host) []Target {
	if h == nil {
		return nil
	}
	var out []Target
	seen := map[topology.GPUType]bool{}
	for i := range h.Devices {
		d := &h.Devices[i]
		if d.Schedulable() && !seen[d.Type] {
			seen[d.Type] = true
			out = append(out, Target{Type: d.Type, UUID: d.UUID})
		}
	}
	return out
}

// Runner runs argv with env added to the environment and returns what it
// wrote on standard output. It must stop the program and return once ctx is
// done, with an error: a nil error means the program ran to its end, and
// its output is taken even if ctx is done by the time the Runner returns.
// ExecRunner is the Runner for real programs; tests inject their own.
type Runner func(ctx context.Context, argv, env []string) ([]byte, error)

// Parser reads a rate from a run's standard output. It returns an error
// wrapping ErrNoRate when there is none.
type Parser func(out []byte) (float64, error)

// ParseRate implements the default reporting protocol: the rate is the last
// line of the form
//
//	rate: <number>
//
// (leading and trailing space allowed, "rate" in any case), where <number> is
// anything strconv.ParseFloat accepts and is finite and not negative. The
// unit is the caller's, for example training steps per second; it must be the
// same for every GPU type of a workload. Other lines are ignored, so a
// workload may log freely and report progress as it goes: only the last
// report counts. A carriage return ends a line too, as progress bars
// redraw theirs with one, and a line may be of any length: a 1 MiB limit
// once dropped every report after a long progress line without a word.
func ParseRate(out []byte) (float64, error) {
	var last string
	found, size := false, len(out)
	for len(out) > 0 {
		end := bytes.IndexAny(out, "\r\n")
		if end < 0 {
			end = len(out)
		}
		line := strings.TrimSpace(string(out[:end]))
		out = out[min(end+1, len(out)):]
		if len(line) > 5 && strings.EqualFold(line[:5], "rate:") {
			last, found = strings.TrimSpace(line[5:]), true
		}
	}
	if !found {
		return 0, fmt.Errorf("%w: no line \"rate: <number>\" in %d bytes of output", ErrNoRate, size)
	}
	x, err := strconv.ParseFloat(last, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%w: %q is out of float64's range", ErrNoRate, last)
	case err != nil:
		return 0, fmt.Errorf("%w: %q is not a number", ErrNoRate, last)
	case math.IsNaN(x) || math.IsInf(x, 0) || x < 0:
		return 0, fmt.Errorf("%w: %v is not a finite non-negative rate", ErrNoRate, x)
	}
	return x, nil
}

// Profiler measures workloads on GPU types. The zero value is usable: three
// runs per cell, ten minutes per run, real programs, ParseRate. So is a nil
// *Profiler, which is the zero value.
type Profiler struct {
	Repeats int           // runs per cell; 0 means 3, and a negative count is refused
	Timeout time.Duration // limit on each run; 0 means 10 minutes, and a negative limit is refused
	Run     Runner        // nil means ExecRunner
	Parse   Parser        // nil means ParseRate
}

// RunError reports why a cell of a profile has no rate: the run that failed,
// on which device, and the tail of its output. It unwraps to ErrTimeout,
// ErrRun, ErrNoRate or the context's error, and to the underlying cause.
type RunError struct {
	Workload string
	Type     topology.GPUType
	UUID     string
	Run      int    // 0-based run of the cell that failed
	Output   string // last bytes of the run's standard output
	Err      error
}

// Error names the workload, the device and the run that failed, and why.
func (e *RunError) Error() string {
	return fmt.Sprintf("gpu: profile %q on %s (%s), run %d: %v", e.Workload, e.Type, e.UUID, e.Run, e.Err)
}

// Unwrap returns the run's error.
func (e *RunError) Unwrap() error { return e.Err }

// Cell is the outcome of profiling one workload on one GPU type.
type Cell struct {
	Rate float64   // median of Runs; 0 when Err is set
	Runs []float64 // rates of the runs that succeeded, in run order
	Err  error     // a *RunError when the cell failed; nil otherwise
}

// Profile holds one row per workload and one column per target GPU type.
type Profile struct {
	Workloads []string
	Types     []topology.GPUType
	Cells     [][]Cell // Cells[i][k]: Workloads[i] on Types[k]
}

// Err joins the errors of every failed cell, in row-major order; nil when
// every cell has a rate (a nil p has no cells).
func (p *Profile) Err() error {
	if p == nil {
		return nil
	}
	return joinCellErrors(p.Cells, func(c Cell) error { return c.Err })
}

// joinCellErrors joins the errors of cells, in row-major order.
func joinCellErrors[C any](cells [][]C, errOf func(C) error) error {
	var errs []error
	for _, row := range cells {
		for _, c := range row {
			if err := errOf(c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Matrix returns the rates as a speedup.Matrix. If any cell failed it returns
// nil and Err(): a failed cell is never filled in silently. To estimate the
// missing cells instead, pass Values to speedup.Complete. Otherwise it
// returns speedup.New's error for a profile that is not a matrix (a nil p,
// cells that do not match Workloads and Types, a rate that is not finite).
func (p *Profile) Matrix() (*speedup.Matrix, error) {
	if err := p.Err(); err != nil {
		return nil, err
	}
	if p == nil {
		return speedup.New(nil, nil, nil)
	}
	return speedup.New(p.Workloads, p.Types, p.Values())
}

// Values returns the rates, one row per workload, with NaN in failed cells
// (the marker speedup.Complete takes for a missing entry); none for a nil p.
func (p *Profile) Values() [][]float64 {
	if p == nil {
		return nil
	}
	out := make([][]float64, len(p.Cells))
	for i, row := range p.Cells {
		out[i] = make([]float64, len(row))
		for k, c := range row {
			out[i][k] = c.Rate
			if c.Err != nil {
				out[i][k] = math.NaN()
			}
		}
	}
	return out
}

// outputTail is how much of a failed run's output a RunError keeps.
const outputTail = 512

// Profile runs every workload on every target, Repeats times each, one run at
// a time, and takes the median rate of each cell. A run that exits with an
// error, exceeds Timeout or reports no rate fails its cell (the cell's later
// runs are skipped) with a *RunError; other cells go on. Profile returns an
// error wrapping ErrProfile for an invalid request or a negative Repeats or
// Timeout (joined with errors.Join; a UUID targeted twice is a
// *gpufair.InputError on "Target.UUID" wrapping gpufair.ErrDuplicate, an Env
// entry without '=' one on "Workload.Env" wrapping gpufair.ErrValue), and
// ctx's error if ctx is done before the end, together with the
// profile so far (cells not run carry ctx's error).
func (p *Profiler) Profile(ctx context.Context, ws []Workload, ts []Target) (*Profile, error) {
	var set Profiler
	if p != nil {
		set = *p
	}
	if err := checkRequest(set, ws, ts); err != nil {
		return nil, err
	}
	repeats, timeout, run, parse := set.runSettings()
	out := &Profile{Cells: make([][]Cell, len(ws))}
	for _, w := range ws {
		out.Workloads = append(out.Workloads, w.Name)
	}
	for _, t := range ts {
		out.Types = append(out.Types, t.Type)
	}
	for i, w := range ws {
		out.Cells[i] = make([]Cell, len(ts))
		for k, t := range ts {
			c := &out.Cells[i][k]
			for r := range repeats {
				if err := ctx.Err(); err != nil {
					c.Runs, c.Err = nil, &RunError{Workload: w.Name, Type: t.Type, UUID: t.UUID, Run: r, Err: err}
					break
				}
				x, err := runOnce(ctx, run, parse, timeout, w, t)
				if err != nil {
					err.Run = r
					c.Err = err
					break
				}
				c.Runs = append(c.Runs, x)
			}
			if c.Err == nil {
				c.Rate = stat.Median(c.Runs)
			}
		}
	}
	return out, ctx.Err()
}

// runSettings returns p's settings with their defaults filled in.
func (p Profiler) runSettings() (repeats int, timeout time.Duration, run Runner, parse Parser) {
	repeats, timeout, run, parse = p.RunsPerCell(), p.Timeout, p.Run, p.Parse
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	if run == nil {
		run = ExecRunner
	}
	if parse == nil {
		parse = ParseRate
	}
	return repeats, timeout, run, parse
}

func runOnce(ctx context.Context, run Runner, parse Parser, timeout time.Duration, w Workload, t Target) (float64, *RunError) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return measure(ctx, rctx, rctx, run, parse, timeout, w, t, slices.Clip(w.Env))
}

// measure runs w on t under runCtx, with env and t's CUDA_VISIBLE_DEVICES,
// and reads its rate. ctx is the caller's context and rctx the run's
// deadline (timeout after its start), which runCtx derives from.
func measure(ctx, rctx, runCtx context.Context, run Runner, parse Parser, timeout time.Duration, w Workload, t Target, env []string) (float64, *RunError) {
	env = append(env, "CUDA_VISIBLE_DEVICES="+t.UUID)
	stdout, err := run(runCtx, w.Argv, env)
	re := &RunError{Workload: w.Name, Type: t.Type, UUID: t.UUID, Output: tail(stdout, outputTail)}
	switch {
	case ctx.Err() != nil:
		re.Err = ctx.Err()
		return 0, re
	case rctx.Err() != nil && err != nil:
		re.Err = fmt.Errorf("%w after %v: %w", ErrTimeout, timeout, rctx.Err())
		return 0, re
	case err != nil:
		re.Err = fmt.Errorf("%w: %w", ErrRun, err)
		return 0, re
	}
	x, err := parse(stdout)
	if err != nil {
		if !errors.Is(err, ErrNoRate) {
			err = fmt.Errorf("%w: %w", ErrNoRate, err)
		}
		re.Err = err
		return 0, re
	}
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		re.Err = fmt.Errorf("%w: parser returned %v", ErrNoRate, x)
		return 0, re
	}
	return x, nil
}

// RunsPerCell returns the runs Profile makes of each cell: Repeats, or 3
// where it is 0 (Profile refuses a negative Repeats). A nil p is the zero
// value.
func (p *Profiler) RunsPerCell() int {
	if p == nil || p.Repeats == 0 {
		return 3
	}
	return p.Repeats
}

func checkRequest(p Profiler, ws []Workload, ts []Target) error {
	var errs []error
	if p.Repeats < 0 {
		errs = append(errs, fmt.Errorf("%w: Repeats %d is negative", ErrProfile, p.Repeats))
	}
	if p.Timeout < 0 {
		errs = append(errs, fmt.Errorf("%w: Timeout %v is negative", ErrProfile, p.Timeout))
	}
	if len(ws) == 0 {
		errs = append(errs, fmt.Errorf("%w: no workloads", ErrProfile))
	}
	if len(ts) == 0 {
		errs = append(errs, fmt.Errorf("%w: no targets", ErrProfile))
	}
	names := map[string]bool{}
	for i, w := range ws {
		switch {
		case w.Name == "":
			errs = append(errs, fmt.Errorf("%w: workload %d has no name", ErrProfile, i))
		case names[w.Name]:
			errs = append(errs, fmt.Errorf("%w: workload %q listed twice", ErrProfile, w.Name))
		}
		names[w.Name] = true
		if len(w.Argv) == 0 || w.Argv[0] == "" {
			errs = append(errs, fmt.Errorf("%w: workload %q has no command", ErrProfile, w.Name))
		}
		for _, e := range w.Env {
			if !strings.Contains(e, "=") {
				// exec would pass it on, and the program's getenv never see it.
				errs = append(errs, gpufair.Invalid("Workload.Env", w.Name, gpufair.ErrValue, "%w: entry %q is not KEY=value", ErrProfile, e))
			}
		}
	}
	types := map[topology.GPUType]bool{}
	uuids := map[string]topology.GPUType{}
	for i, t := range ts {
		switch {
		case t.Type == "":
			errs = append(errs, fmt.Errorf("%w: target %d has no GPU type", ErrProfile, i))
		case types[t.Type]:
			errs = append(errs, fmt.Errorf("%w: GPU type %q targeted twice", ErrProfile, t.Type))
		}
		types[t.Type] = true
		switch {
		case t.UUID == "":
			errs = append(errs, fmt.Errorf("%w: target %q has no device UUID", ErrProfile, t.Type))
		case strings.Contains(t.UUID, ","):
			// CUDA_VISIBLE_DEVICES would expose every device it lists.
			errs = append(errs, fmt.Errorf("%w: target %q's UUID %q names more than one device", ErrProfile, t.Type, t.UUID))
		default:
			if other, dup := uuids[t.UUID]; dup {
				// Both types would be measured on one device.
				errs = append(errs, gpufair.Invalid("Target.UUID", string(t.Type), gpufair.ErrDuplicate, "%w: device %q is also the target of %q", ErrProfile, t.UUID, other))
			}
			uuids[t.UUID] = t.Type
		}
	}
	return errors.Join(errs...)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
