package sim

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/topology"
)

func gavelThroughputs(t testing.TB) *data.Throughputs {
	t.Helper()
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestGenerate(t *testing.T) {
	tp := gavelThroughputs(t)
	const n = 4000
	w, err := Generate(tp, GenerateSettings{Jobs: n, Rate: 4, Multi: true}, rand.NewPCG(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	again, _ := Generate(tp, GenerateSettings{Jobs: n, Rate: 4, Multi: true}, rand.NewPCG(1, 2))
	if diff := cmp.Diff(w, again); diff != "" {
		t.Fatalf("same seed, different workloads (-first +second):\n%s", diff)
	}
	gangs := map[int]int{}
	models := map[string]bool{}
	long := 0
	for i, j := range w.Jobs {
		gangs[j.Gang]++
		models[j.Kind] = true
		dur := j.Steps / j.Rates[2]
		if dur < 60*math.Pow(10, 1.5)*(1-1e-12) || dur > 60*1e4*(1+1e-12) {
			t.Fatalf("job %d lasts %v s on a V100, outside [60·10^1.5, 60·10^4]", i, dur)
		}
		if dur > 60*1e3 {
			long++
		}
		if i > 0 && j.Arrival < w.Jobs[i-1].Arrival {
			t.Fatalf("job %d arrives before job %d", i, i-1)
		}
		if (j.Gang == 1) != (j.Spread == nil) {
			t.Fatalf("job %d has gang %d and spread rates %v", i, j.Gang, j.Spread)
		}
	}
	if len(models) != 26 {
		t.Errorf("%d models drawn, want Gavel's 26", len(models))
	}
	// 4,000 Poisson arrivals at 4 an hour span about 1,000 hours.
	if h := w.Jobs[n-1].Arrival / 3600; math.Abs(h-1000) > 60 {
		t.Errorf("last arrival after %.0f h, want about 1000", h)
	}
	// 20% of durations in the long range, within 3 standard deviations.
	if f := float64(long) / n; math.Abs(f-0.2) > 3*math.Sqrt(0.2*0.8/n) {
		t.Errorf("%.3f of jobs longer than 1000 minutes, want about 0.2", f)
	}
	// Gangs above 1 only for the 19 distributed models (of 26): 30% × 19/26.
	if f := float64(n-gangs[1]) / n; math.Abs(f-0.3*19/26) > 0.03 {
		t.Errorf("%.3f of jobs span several GPUs, want about %.3f", f, 0.3*19/26)
	}
	single, _ := Generate(tp, GenerateSettings{Jobs: 100}, rand.NewPCG(1, 2))
	for _, j := range single.Jobs {
		if j.Gang != 1 || j.Arrival != 0 {
			t.Fatalf("continuous-single static trace has job %+v", j)
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	tp := gavelThroughputs(t)
	for _, s := range []GenerateSettings{{Jobs: 0}, {Jobs: 1, Rate: math.NaN()}, {Jobs: 1, Types: []topology.GPUType{"tpu"}}} {
		if _, err := Generate(tp, s, rand.NewPCG(1, 1)); err == nil {
			t.Errorf("Generate(%+v) succeeded", s)
		}
	}
}

// A rate of 1e-320 jobs an hour gave arrivals at +Inf with no error, and
// NewCluster with a count of math.MaxInt built servers until memory ran out.
func TestGenerateAndNewClusterOverflow(t *testing.T) {
	_, err := Generate(gavelThroughputs(t), GenerateSettings{Jobs: 3, Rate: 1e-320}, rand.NewPCG(1, 0))
	var ie *gpufair.InputError
	if !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != "GenerateSettings.Rate" {
		t.Errorf("Generate(Rate 1e-320) = %v, want an *InputError on GenerateSettings.Rate wrapping gpufair.ErrValue", err)
	}
	for _, count := range [][]int{{math.MaxInt}, {topology.MaxClusterGPUs, 1}, {math.MaxInt, math.MaxInt}} {
		_, err := NewCluster(GavelTypes()[:len(count)], count, 1)
		if !errors.Is(err, gpufair.ErrTooLarge) || !errors.As(err, &ie) || ie.Field != "Cluster.Count" {
			t.Errorf("NewCluster(%v) = %v, want an *InputError on Cluster.Count wrapping gpufair.ErrTooLarge", count, err)
		}
	}
}

func TestReadTrace(t *testing.T) {
	tp := gavelThroughputs(t)
	f, err := data.Gavel().Open("traces/msr-seed0/0e4a51.trace")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, skipped, err := ReadTrace(f, tp, &TraceSettings{SkipUnmeasured: true})
	if err != nil {
		t.Fatal(err)
	}
	// 197 of the 1,181 lines have a scale factor the table lacks (counted
	// with a script over the file).
	if len(w.Jobs) != 1181-197 || len(skipped) != 197 {
		t.Errorf("kept %d jobs, skipped %d; want 984 and 197", len(w.Jobs), len(skipped))
	}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	first := w.Jobs[0]
	if first.Kind != "Transformer (batch size 128)" || first.Steps != 95121 || first.Arrival != 0 || first.Gang != 1 || first.ID != "000" {
		t.Errorf("first job %+v", first)
	}
	for _, bad := range []string{
		"A3C\tcmd\t-n\t1\t100\t0", // 6 fields
		"A3C\tcmd\t-n\t1\tmany\t0\t1",
		"A3C\tcmd\t-n\t1\t100\tsoon\t1",
		"A3C\tcmd\t-n\t1\t100\t0\tx",
		"Nope\tcmd\t-n\t1\t100\t0\t1",
		strings.Repeat("x", 2<<20), // beyond the scanner's 1 MiB
		// Numbers that parse but are out of range: they were read, and
		// failed later in Validate or Run, without a line number.
		"A3C\tcmd\t-n\t1\tNaN\t0\t1",
		"A3C\tcmd\t-n\t1\t-5\t0\t1",
		"A3C\tcmd\t-n\t1\t100\t-1e308\t1",
		"A3C\tcmd\twd\t-n\t1\t100\t1\tNaN\t0\t0",
		"A3C\tcmd\twd\t-n\t1\t100\t1\t1\t0\t+Inf",
	} {
		if _, _, err := ReadTrace(strings.NewReader("A3C\tcmd\t-n\t1\t100\t0\t1\n"+bad), tp, nil); !errors.Is(err, ErrTrace) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("ReadTrace(%.40q) error = %v, want ErrTrace on line 2", bad, err)
		}
	}
}
