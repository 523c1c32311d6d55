package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/gpu"
)

// pairRun stands in for a workload measured in pairs. argv[0] says how it
// behaves: "keep <rate>" keeps the co-location barrier and reports <rate>
// (a run of its own outside a pair); "late <rate>" does so after 20 ms;
// "alone <rate>" ignores the barrier; "fail" fails at once. Within a pair,
// a keeping run reports its rate divided by the runs ready when it starts
// timing, as two jobs sharing a device would.
func pairRun(ctx context.Context, argv, env []string) ([]byte, error) {
	vars := envMap(env)
	if argv[0] == "fail" {
		return []byte("CUDA error: out of memory\n"), errors.New("exit status 1")
	}
	rate, err := strconv.ParseFloat(argv[1], 64)
	if err != nil {
		return nil, err
	}
	if argv[0] == "alone" || vars[gpu.EnvBarrier] == "" {
		return fmt.Appendf(nil, "rate: %v\n", rate), nil
	}
	if argv[0] == "late" {
		time.Sleep(20 * time.Millisecond)
	}
	n, err := arrive(ctx, vars, "ready")
	if err != nil {
		return nil, err
	}
	if _, err := arrive(ctx, vars, "done"); err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "device: %s\nrate: %v\n", vars["CUDA_VISIBLE_DEVICES"], rate/float64(n)), nil
}

var pairWorkloads = []gpu.Workload{
	{Name: "resnet", Argv: []string{"keep", "10"}},
	{Name: "lm", Argv: []string{"late", "4"}},
	{Name: "solo", Argv: []string{"alone", "7"}},
	{Name: "oom", Argv: []string{"fail"}},
}

// TestProfilePairs: both runs of a pair start together and meet at the
// barrier (a late one included: run one after the other, the first would
// wait for ever), on every target, and Rates labels the medians as
// alloc.SpaceSharing takes them.
func TestProfilePairs(t *testing.T) {
	p := gpu.Profiler{Repeats: 2, Run: pairRun, Timeout: time.Minute}
	prof, err := p.ProfilePairs(context.Background(), pairWorkloads, []gpu.Pair{{A: "resnet", B: "lm"}, {A: "lm", B: "lm"}}, twoTypes)
	if err != nil {
		t.Fatalf("ProfilePairs() error = %v", err)
	}
	got, err := prof.Rates()
	if err != nil {
		t.Fatalf("Rates() error = %v", err)
	}
	want := []alloc.PairRate{
		{A: "resnet", B: "lm", Type: "k80", RateA: 5, RateB: 2},
		{A: "resnet", B: "lm", Type: "v100", RateA: 5, RateB: 2},
		{A: "lm", B: "lm", Type: "k80", RateA: 2, RateB: 2},
		{A: "lm", B: "lm", Type: "v100", RateA: 2, RateB: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Rates() mismatch (-want +got):\n%s", diff)
	}
	if c := prof.Cells[0][1]; len(c.RunsA) != 2 || len(c.RunsB) != 2 {
		t.Errorf("cell runs %v and %v, want 2 each", c.RunsA, c.RunsB)
	}
}

// TestProfilePairsFailures: a run that ignores the barrier may have been
// timed alone, and fails its cell; a run that fails stops its partner,
// which would otherwise wait at the barrier until the timeout; other cells
// go on.
func TestProfilePairsFailures(t *testing.T) {
	p := gpu.Profiler{Repeats: 3, Run: pairRun, Timeout: time.Hour}
	prof, err := p.ProfilePairs(context.Background(), pairWorkloads,
		[]gpu.Pair{{A: "resnet", B: "solo"}, {A: "resnet", B: "oom"}, {A: "resnet", B: "resnet"}}, twoTypes[:1])
	if err != nil {
		t.Fatalf("ProfilePairs() error = %v", err)
	}
	var re *gpu.RunError
	if c := prof.Cells[0][0]; !errors.Is(c.Err, gpu.ErrNotColocated) || !errors.As(c.Err, &re) || re.Workload != "solo" || c.RunsA != nil {
		t.Errorf("pair with a run ignoring the barrier: %+v, want ErrNotColocated naming solo, no runs", c)
	}
	c := prof.Cells[1][0]
	if !errors.Is(c.Err, gpu.ErrRun) || errors.Is(c.Err, gpu.ErrTimeout) || !errors.As(c.Err, &re) || re.Workload != "oom" || !strings.Contains(re.Output, "out of memory") {
		t.Errorf("pair with a failing run: %v, want ErrRun naming oom with its output", c.Err)
	}
	if c := prof.Cells[2][0]; c.Err != nil || c.RateA != 5 || c.RateB != 5 {
		t.Errorf("self-pair after failed cells: %+v, want rates 5 and 5", c)
	}
	if _, err := prof.Rates(); !errors.Is(err, gpu.ErrNotColocated) || !errors.Is(err, gpu.ErrRun) {
		t.Errorf("Rates() error = %v, want the failed cells' errors", err)
	}
}

func TestProfilePairsTimeout(t *testing.T) {
	ws := []gpu.Workload{{Name: "resnet", Argv: []string{"keep", "10"}}, {Name: "mute", Argv: []string{"alone", "1"}}}
	// keep waits at the barrier for a partner that never arrives.
	mute := func(ctx context.Context, argv, env []string) ([]byte, error) {
		if argv[0] == "alone" {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return pairRun(ctx, argv, env)
	}
	p := gpu.Profiler{Repeats: 1, Run: mute, Timeout: 50 * time.Millisecond}
	prof, err := p.ProfilePairs(context.Background(), ws, []gpu.Pair{{A: "resnet", B: "mute"}}, twoTypes[:1])
	if err != nil {
		t.Fatal(err)
	}
	if c := prof.Cells[0][0]; !errors.Is(c.Err, gpu.ErrTimeout) {
		t.Errorf("cell error = %v, want ErrTimeout", c.Err)
	}
}

func TestProfilePairsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := gpu.Profiler{Run: pairRun}
	prof, err := p.ProfilePairs(ctx, pairWorkloads, []gpu.Pair{{A: "resnet", B: "lm"}}, twoTypes)
	if !errors.Is(err, context.Canceled) || prof == nil {
		t.Fatalf("ProfilePairs() = %v, %v; want the profile and context.Canceled", prof, err)
	}
	for k, c := range prof.Cells[0] {
		if !errors.Is(c.Err, context.Canceled) {
			t.Errorf("cell %d error = %v, want context.Canceled", k, c.Err)
		}
	}
}

func TestProfilePairsInvalid(t *testing.T) {
	p := gpu.Profiler{Run: pairRun}
	for _, tc := range []struct {
		name  string
		pairs []gpu.Pair
		want  string
	}{
		{"no pairs", nil, "no pairs"},
		{"unknown workload", []gpu.Pair{{A: "resnet", B: "bert"}}, `"bert"`},
		{"listed twice", []gpu.Pair{{A: "resnet", B: "lm"}, {A: "lm", B: "resnet"}}, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prof, err := p.ProfilePairs(context.Background(), pairWorkloads, tc.pairs, twoTypes)
			if !errors.Is(err, gpu.ErrProfile) || !strings.Contains(err.Error(), tc.want) || prof != nil {
				t.Errorf("ProfilePairs() = %v, %v; want ErrProfile mentioning %s", prof, err, tc.want)
			}
		})
	}
	var nilp *gpu.PairProfile
	if r, err := nilp.Rates(); r != nil || err != nil {
		t.Errorf("nil PairProfile's Rates() = %v, %v; want none", r, err)
	}
}

// TestProfilePairsProperty draws workloads that keep the barrier, keep it
// late, ignore it or fail, and pairs of them: a cell has rates exactly when
// both of its workloads keep the barrier, each the median of Repeats runs of
// half its rate alone (pairRun's shared device); otherwise its error names
// a workload of the pair that ignored the barrier or failed, and says which.
func TestProfilePairsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kinds := []string{"keep", "late", "alone", "fail"}
		n := rapid.IntRange(1, 4).Draw(t, "workloads")
		ws := make([]gpu.Workload, n)
		kind := map[string]string{}
		rate := map[string]float64{}
		for i := range ws {
			name := fmt.Sprintf("w%d", i)
			kind[name] = rapid.SampledFrom(kinds).Draw(t, "kind")
			rate[name] = float64(rapid.IntRange(1, 100).Draw(t, "rate"))
			ws[i] = gpu.Workload{Name: name, Argv: []string{kind[name], strconv.FormatFloat(rate[name], 'g', -1, 64)}}
		}
		var pairs []gpu.Pair
		for i := range ws {
			for j := i; j < n; j++ {
				if rapid.Bool().Draw(t, "pair") {
					a, b := ws[i].Name, ws[j].Name
					if rapid.Bool().Draw(t, "swap") {
						a, b = b, a
					}
					pairs = append(pairs, gpu.Pair{A: a, B: b})
				}
			}
		}
		if len(pairs) == 0 {
			pairs = []gpu.Pair{{A: ws[0].Name, B: ws[0].Name}}
		}
		p := gpu.Profiler{Repeats: rapid.IntRange(1, 3).Draw(t, "repeats"), Run: pairRun, Timeout: time.Minute}
		prof, err := p.ProfilePairs(context.Background(), ws, pairs, twoTypes[:1])
		if err != nil {
			t.Fatalf("ProfilePairs() error = %v", err)
		}
		keeps := func(name string) bool { return kind[name] == "keep" || kind[name] == "late" }
		allKept := true
		for q, pr := range pairs {
			c := prof.Cells[q][0]
			if keeps(pr.A) && keeps(pr.B) {
				if c.Err != nil || c.RateA != rate[pr.A]/2 || c.RateB != rate[pr.B]/2 || len(c.RunsA) != p.Repeats || len(c.RunsB) != p.Repeats {
					t.Fatalf("pair %v: %+v, want rates %v and %v over %d runs", pr, c, rate[pr.A]/2, rate[pr.B]/2, p.Repeats)
				}
				continue
			}
			allKept = false
			var re *gpu.RunError
			if !errors.As(c.Err, &re) || (re.Workload != pr.A && re.Workload != pr.B) || c.RunsA != nil || c.RateA != 0 {
				t.Fatalf("pair %v: %+v, want a RunError naming one of its workloads", pr, c)
			}
			switch kind[re.Workload] {
			case "alone":
				if !errors.Is(c.Err, gpu.ErrNotColocated) {
					t.Fatalf("pair %v: %v, want ErrNotColocated for %s", pr, c.Err, re.Workload)
				}
			case "fail":
				if !errors.Is(c.Err, gpu.ErrRun) {
					t.Fatalf("pair %v: %v, want ErrRun for %s", pr, c.Err, re.Workload)
				}
			default:
				t.Fatalf("pair %v: %v blames %s, which keeps the barrier", pr, c.Err, re.Workload)
			}
		}
		if r, err := prof.Rates(); (err == nil) != allKept || (err == nil && len(r) != len(pairs)) {
			t.Fatalf("Rates() = %d rates, %v; every cell measured: %v", len(r), err, allKept)
		}
	})
}
