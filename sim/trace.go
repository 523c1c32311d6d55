package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/topology"
)

// ReadTrace reads one of Gavel's job traces (data.Gavel(), under traces/):
// tab-separated lines of 7 fields (msr-seed0: job type, command, step-count
// argument, needs-data-dir flag, total steps, arrival time in seconds, scale
// factor) or 10 fields (physical_cluster: job type, command, working
// directory, step-count argument, needs-data-dir flag, total steps, scale
// factor, priority weight, SLO, arrival time). Each job's rates come from tp
// over s.Types; job IDs are the order of the jobs kept, zero-padded. It
// returns an error wrapping ErrTrace that names the line for a wrong number
// of fields, a number that does not parse or is out of range (as
// Workload.Validate checks it), and for a job type and scale
// tp has not measured on every type unless s.SkipUnmeasured is set; then it
// drops those lines and returns their numbers (Gavel's msr-seed0 traces
// hold gangs up to 64 GPUs, and scale factors its throughput table lacks).
// A nil s means the zero TraceSettings. A nil r or tp is an
// *gpufair.InputError.
func ReadTrace(r io.Reader, tp *data.Throughputs, s *TraceSettings) (w *Workload, skipped []int, err error) {
	switch {
	case r == nil:
		return nil, nil, gpufair.Invalid("Reader", "", gpufair.ErrEmpty, "nil reader")
	case tp == nil: // reported as the first line's job type, unmeasured
		return nil, nil, gpufair.Invalid("Throughputs", "", gpufair.ErrEmpty, "nil throughputs")
	}
	var set TraceSettings
	if s != nil {
		set = *s
	}
	types := set.Types
	if types == nil {
		types = GavelTypes()
	}
	w = &Workload{Types: slices.Clone(types)}
	var lines []int // each job's line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		j, err := traceJob(strings.Split(text, "\t"), tp, types)
		if errors.Is(err, errUnmeasured) && set.SkipUnmeasured {
			skipped = append(skipped, line)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: line %d: %w", ErrTrace, line, err)
		}
		w.Jobs = append(w.Jobs, j)
		lines = append(lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%w: line %d: %w", ErrTrace, line+1, err)
	}
	if len(w.Jobs) == 0 {
		return nil, nil, gpufair.Invalid("Workload.Jobs", "", gpufair.ErrEmpty, "empty trace")
	}
	width := len(fmt.Sprint(len(w.Jobs) - 1))
	seen := make(map[alloc.JobID]bool, len(w.Jobs))
	for i := range w.Jobs {
		w.Jobs[i].ID = alloc.JobID(fmt.Sprintf("%0*d", width, i))
		// Numbers that parse may still be out of range (NaN steps,
		// a negative arrival): named by their line here, not later by
		// Validate or Run.
		if err := w.validateJob(&w.Jobs[i], i, seen); err != nil {
			return nil, nil, fmt.Errorf("%w: line %d: %w", ErrTrace, lines[i], err)
		}
	}
	return w, skipped, nil
}

// TraceSettings tune ReadTrace. The zero value reads Gavel's three GPU
// types and rejects unmeasured job types.
type TraceSettings struct {
	// Types are the GPU types, named as in Gavel's data; nil means
	// GavelTypes().
	Types []topology.GPUType
	// SkipUnmeasured drops the jobs whose type and scale tp has not
	// measured on every type, instead of failing.
	SkipUnmeasured bool
}

// errUnmeasured marks a job type without throughputs.
var errUnmeasured = errors.New("not measured on every GPU type")

// traceJob parses one line's fields.
func traceJob(f []string, tp *data.Throughputs, types []topology.GPUType) (Job, error) {
	var steps, arrival, scale, weight string
	switch len(f) {
	case 7:
		steps, arrival, scale, weight = f[4], f[5], f[6], "1"
	case 10:
		steps, scale, weight, arrival = f[5], f[6], f[7], f[9]
	default:
		return Job{}, fmt.Errorf("%d fields, want 7 or 10", len(f))
	}
	var (
		j   = Job{Kind: f[0]}
		err error
	)
	if j.Steps, err = strconv.ParseFloat(steps, 64); err != nil {
		return Job{}, fmt.Errorf("total steps: %v", err)
	}
	if j.Arrival, err = strconv.ParseFloat(arrival, 64); err != nil {
		return Job{}, fmt.Errorf("arrival time: %v", err)
	}
	if j.Weight, err = strconv.ParseFloat(weight, 64); err != nil {
		return Job{}, fmt.Errorf("priority weight: %v", err)
	}
	if j.Gang, err = strconv.Atoi(scale); err != nil {
		return Job{}, fmt.Errorf("scale factor: %v", err)
	}
	var ok bool
	if j.Rates, j.Spread, ok = Rates(tp, types, data.JobType{Model: f[0], Scale: j.Gang}); !ok {
		return Job{}, fmt.Errorf("job type %q ×%d: %w", f[0], j.Gang, errUnmeasured)
	}
	return j, nil
}
