package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/stat"
	"github.com/gpufair/gpufair/topology"
)

// The co-location protocol. Two programs started together do not measure
// together: one may still be loading its framework while the other has
// finished its timed steps, and would then report its rate alone. So
// ProfilePairs gives each of a pair's two runs these variables, and a
// workload measured in pairs must keep the barrier they describe:
//
//  1. once warmed up, create the file <dir>/<id>.ready and wait until
//     <parties> files named *.ready are in <dir>;
//  2. time its steps and take its rate;
//  3. create <dir>/<id>.done and keep running untimed steps until <parties>
//     files named *.done are in <dir>, so that its partner's timed steps never
//     run alone;
//  4. report its rate and exit.
//
// where <dir>, <id> and <parties> are the values of EnvBarrier, EnvBarrierID
// and EnvBarrierParties. A run that leaves no .ready or .done file fails
// its cell with ErrNotColocated. examples/gpu-probe/gavel_jobs.py keeps it.
const (
	EnvBarrier        = "GPUFAIR_BARRIER"         // the directory the pair's files go in
	EnvBarrierID      = "GPUFAIR_BARRIER_ID"      // this run's file name: "a" or "b"
	EnvBarrierParties = "GPUFAIR_BARRIER_PARTIES" // how many runs meet: "2"
)

// ErrNotColocated reports a run of a pair that did not keep the co-location
// barrier (see EnvBarrier): its rate may have been measured alone.
var ErrNotColocated = errors.New("gpu: workload did not keep the co-location barrier")

// Pair names two workloads to run at once on one device (Gavel §3.1, space
// sharing). A may equal B: two runs of one workload.
type Pair struct{ A, B string }

// PairCell is the outcome of profiling one pair on one GPU type: each
// workload's rate while the other ran beside it.
type PairCell struct {
	RateA, RateB float64   // medians of RunsA and RunsB; 0 when Err is set
	RunsA, RunsB []float64 // rates of the runs that succeeded, in run order
	Err          error     // a *RunError when the cell failed; nil otherwise
}

// PairProfile holds one row per pair and one column per target GPU type.
type PairProfile struct {
	Pairs []Pair
	Types []topology.GPUType
	Cells [][]PairCell // Cells[q][k]: Pairs[q] on Types[k]
}

// Err joins the errors of every failed cell, in row-major order; nil when
// every cell has rates (a nil p has no cells).
func (p *PairProfile) Err() error {
	if p == nil {
		return nil
	}
	return joinCellErrors(p.Cells, func(c PairCell) error { return c.Err })
}

// Rates returns the cells as the co-locations alloc.SpaceSharing takes,
// labelled by workload name, in row-major order. If any cell failed it
// returns nil and Err(): a failed cell is never reported as a pair that
// does not fit (rates 0).
func (p *PairProfile) Rates() ([]alloc.PairRate, error) {
	if err := p.Err(); err != nil || p == nil {
		return nil, err
	}
	var out []alloc.PairRate
	for q, row := range p.Cells {
		for k, c := range row {
			out = append(out, alloc.PairRate{A: p.Pairs[q].A, B: p.Pairs[q].B, Type: p.Types[k], RateA: c.RateA, RateB: c.RateB})
		}
	}
	return out, nil
}

// ProfilePairs runs the two workloads of every pair at once on each
// target's device, Repeats times, and takes the median rate of each. Each
// run of a pair starts both programs with the co-location variables
// (EnvBarrier) and a fresh directory, and ends when both have: when one
// fails, the other is stopped, and the cell fails with the first run's
// *RunError (later runs of the cell are skipped; other cells go on). A
// program that exits without keeping the barrier fails the cell with a
// *RunError wrapping ErrNotColocated, and its partner is stopped, not left
// waiting. Timeout bounds each run of a pair.
//
// Errors are those of Profile, and, wrapping ErrProfile, no pairs, a pair
// naming a workload not in ws, or a pair listed twice (in either order).
func (p *Profiler) ProfilePairs(ctx context.Context, ws []Workload, pairs []Pair, ts []Target) (*PairProfile, error) {
	var set Profiler
	if p != nil {
		set = *p
	}
	err := checkRequest(set, ws, ts)
	if perr := checkPairs(ws, pairs); perr != nil {
		err = errors.Join(err, perr)
	}
	if err != nil {
		return nil, err
	}
	repeats, timeout, run, parse := set.runSettings()
	byName := make(map[string]Workload, len(ws))
	for _, w := range ws {
		byName[w.Name] = w
	}
	out := &PairProfile{Pairs: slices.Clone(pairs), Cells: make([][]PairCell, len(pairs))}
	for _, t := range ts {
		out.Types = append(out.Types, t.Type)
	}
	for q, pr := range pairs {
		out.Cells[q] = make([]PairCell, len(ts))
		for k, t := range ts {
			c := &out.Cells[q][k]
			for r := range repeats {
				if err := ctx.Err(); err != nil {
					c.RunsA, c.RunsB, c.Err = nil, nil, &RunError{Workload: pr.A, Type: t.Type, UUID: t.UUID, Run: r, Err: err}
					break
				}
				xa, xb, err := runPair(ctx, run, parse, timeout, byName[pr.A], byName[pr.B], t)
				if err != nil {
					err.Run = r
					c.RunsA, c.RunsB, c.Err = nil, nil, err
					break
				}
				c.RunsA, c.RunsB = append(c.RunsA, xa), append(c.RunsB, xb)
			}
			if c.Err == nil {
				c.RateA, c.RateB = stat.Median(c.RunsA), stat.Median(c.RunsB)
			}
		}
	}
	return out, ctx.Err()
}

// runPair runs a and b at once on t, as one co-located run, and returns
// their rates, or the error of the run that failed first.
func runPair(ctx context.Context, run Runner, parse Parser, timeout time.Duration, a, b Workload, t Target) (float64, float64, *RunError) {
	dir, err := os.MkdirTemp("", "gpufair-pair-")
	if err != nil {
		return 0, 0, &RunError{Workload: a.Name, Type: t.Type, UUID: t.UUID, Err: fmt.Errorf("%w: %w", ErrRun, err)}
	}
	defer os.RemoveAll(dir)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Stopping the partner of a failed run, not the deadline, ends pctx
	// early; the partner's error is then not the cause.
	pctx, stop := context.WithCancel(rctx)
	defer stop()
	ids := [2]string{"a", "b"}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		first  = -1
		rates  [2]float64
		errsOf [2]*RunError
	)
	for i, w := range [2]Workload{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := append(slices.Clip(w.Env), EnvBarrier+"="+dir, EnvBarrierID+"="+ids[i], EnvBarrierParties+"=2")
			x, err := measure(ctx, rctx, pctx, run, parse, timeout, w, t, env)
			if err == nil {
				// Checked at once: its partner may be waiting for it.
				err = kept(dir, ids[i], w, t)
			}
			mu.Lock()
			defer mu.Unlock()
			rates[i], errsOf[i] = x, err
			if err != nil && first < 0 {
				first = i
				stop()
			}
		}()
	}
	wg.Wait()
	if first >= 0 {
		return 0, 0, errsOf[first]
	}
	return rates[0], rates[1], nil
}

// kept returns a *RunError wrapping ErrNotColocated unless the run of w
// known as id left both of the barrier's files in dir.
func kept(dir, id string, w Workload, t Target) *RunError {
	for _, stage := range [...]string{"ready", "done"} {
		if _, err := os.Stat(filepath.Join(dir, id+"."+stage)); err != nil {
			return &RunError{Workload: w.Name, Type: t.Type, UUID: t.UUID,
				Err: fmt.Errorf("%w: it left no file %s.%s in %s", ErrNotColocated, id, stage, EnvBarrier)}
		}
	}
	return nil
}

// checkPairs checks that there are pairs, that each names workloads of ws,
// and that none is listed twice, in either order.
func checkPairs(ws []Workload, pairs []Pair) error {
	if len(pairs) == 0 {
		return fmt.Errorf("%w: no pairs", ErrProfile)
	}
	names := make(map[string]bool, len(ws))
	for _, w := range ws {
		names[w.Name] = true
	}
	var errs []error
	seen := make(map[Pair]bool, len(pairs))
	for i, pr := range pairs {
		for _, n := range [...]string{pr.A, pr.B} {
			if !names[n] {
				errs = append(errs, fmt.Errorf("%w: pair %d names workload %q, which is not listed", ErrProfile, i, n))
			}
		}
		if seen[pr] || seen[Pair{A: pr.B, B: pr.A}] {
			errs = append(errs, fmt.Errorf("%w: pair %q and %q listed twice", ErrProfile, pr.A, pr.B))
		}
		seen[pr] = true
	}
	return errors.Join(errs...)
}
