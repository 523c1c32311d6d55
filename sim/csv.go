package sim

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"

	"github.com/gpufair/gpufair"
)

// csvHeader names WriteCSV's columns. Times are in seconds.
var csvHeader = []string{
	"scheduler", "job", "owner", "kind", "gang", "arrival_s", "start_s", "finish_s", "jct_s",
	"steps", "done", "rounds", "restarts", "gpu_seconds", "contention", "isolated_s", "rho", "measured",
}

// WriteCSV writes one line per job of each result, after a header line:
// the scheduler, the job's fields (see JobResult) and whether it is
// measured. NaN (a job that never ran or did not finish) is an empty
// field. Floats are written in the shortest form that reads back exactly.
// A nil result is an *gpufair.InputError, reported before anything is
// written.
func WriteCSV(w io.Writer, results ...*Result) error {
	for i, r := range results {
		if r == nil { // it panicked
			return gpufair.Invalid("Result", "", gpufair.ErrEmpty, "result %d of %d is nil", i, len(results))
		}
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	rec := make([]string, len(csvHeader))
	for _, r := range results {
		for i, j := range r.Jobs {
			measured := i >= r.MeasureFrom && i < r.MeasureTo
			rec = append(rec[:0], r.Scheduler, string(j.ID), string(j.Owner), j.Kind, strconv.Itoa(j.Gang),
				num(j.Arrival), num(j.Start), num(j.Finish), num(j.JCT),
				num(j.Steps), num(j.Done), strconv.Itoa(j.Rounds), strconv.Itoa(j.Restarts), num(j.GPUSeconds), num(j.Contention),
				num(j.Isolated), num(j.Rho), strconv.FormatBool(measured))
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func num(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}
