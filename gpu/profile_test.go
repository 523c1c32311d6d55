package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/topology"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  string
		want float64
		err  bool
	}{
		{"plain", "rate: 12.5\n", 12.5, false},
		{"last wins", "rate: 1\nstep 10\nrate: 2\nbye\n", 2, false},
		{"case and spaces", "  RATE:   3e2  \n", 300, false},
		{"no newline", "rate: 7", 7, false},
		{"zero is a rate", "rate: 0\n", 0, false},
		{"garbage", "hello\nworld\n", 0, true},
		{"empty", "", 0, true},
		{"not a number", "rate: fast\n", 0, true},
		{"last is bad", "rate: 1\nrate: x\n", 0, true},
		{"negative", "rate: -1\n", 0, true},
		{"NaN", "rate: NaN\n", 0, true},
		{"Inf", "rate: +Inf\n", 0, true},
		{"prefix only", "rate:\n", 0, true},
		{"other key", "throughput: 5\n", 0, true},
		{"after a progress bar", "epoch 1 10%\repoch 1 50%\rrate: 4.5\n", 4.5, false},
		{"after a line of 2 MiB", strings.Repeat("=", 2<<20) + "\nrate: 9\n", 9, false},
		{"CRLF", "rate: 6\r\n", 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gpu.ParseRate([]byte(tc.out))
			if tc.err {
				if !errors.Is(err, gpu.ErrNoRate) {
					t.Fatalf("ParseRate(%q) error = %v, want ErrNoRate", tc.out, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseRate(%q) = %v, %v; want %v", tc.out, got, err, tc.want)
			}
		})
	}
}

// fakeRunner answers each run from script, keyed by workload program and
// device UUID, in call order, and records the environment it was given.
type fakeRunner struct {
	script map[string][]string // "argv0 uuid" -> outputs of successive runs
	envs   [][]string
}

func (f *fakeRunner) run(_ context.Context, argv, env []string) ([]byte, error) {
	f.envs = append(f.envs, env)
	uuid := strings.TrimPrefix(env[len(env)-1], "CUDA_VISIBLE_DEVICES=")
	key := argv[0] + " " + uuid
	outs := f.script[key]
	if len(outs) == 0 {
		return nil, fmt.Errorf("no more runs for %s", key)
	}
	f.script[key] = outs[1:]
	return []byte(outs[0]), nil
}

var twoTypes = []gpu.Target{{Type: "k80", UUID: "GPU-k"}, {Type: "v100", UUID: "GPU-v"}}

func TestProfileMedian(t *testing.T) {
	f := &fakeRunner{script: map[string][]string{
		"a GPU-k": {"rate: 3", "rate: 1", "rate: 2"},
		"a GPU-v": {"rate: 10", "rate: 30", "rate: 20"},
		"b GPU-k": {"rate: 5", "rate: 5", "rate: 6"},
		"b GPU-v": {"rate: 9", "rate: 8", "rate: 7"},
	}}
	p := gpu.Profiler{Run: f.run}
	prof, err := p.Profile(context.Background(), []gpu.Workload{
		{Name: "resnet", Argv: []string{"a"}, Env: []string{"X=1"}},
		{Name: "lm", Argv: []string{"b"}},
	}, twoTypes)
	if err != nil {
		t.Fatalf("Profile() error = %v", err)
	}
	m, err := prof.Matrix()
	if err != nil {
		t.Fatalf("Matrix() error = %v", err)
	}
	if diff := cmp.Diff([][]float64{{2, 20}, {5, 8}}, m.Values()); diff != "" {
		t.Errorf("medians mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{3, 1, 2}, prof.Cells[0][0].Runs); diff != "" {
		t.Errorf("runs mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"X=1", "CUDA_VISIBLE_DEVICES=GPU-k"}, f.envs[0]); diff != "" {
		t.Errorf("environment mismatch (-want +got):\n%s", diff)
	}
	if len(f.envs) != 12 {
		t.Errorf("%d runs, want 2 workloads × 2 types × 3 repeats = 12", len(f.envs))
	}
}

func TestProfileEvenRepeats(t *testing.T) {
	f := &fakeRunner{script: map[string][]string{"a GPU-k": {"rate: 4", "rate: 1", "rate: 2", "rate: 100"}}}
	p := gpu.Profiler{Repeats: 4, Run: f.run}
	prof, err := p.Profile(context.Background(), []gpu.Workload{{Name: "w", Argv: []string{"a"}}}, twoTypes[:1])
	if err != nil || prof.Err() != nil {
		t.Fatalf("Profile() error = %v, %v", err, prof.Err())
	}
	if got := prof.Cells[0][0].Rate; got != 3 {
		t.Errorf("median of 4, 1, 2, 100 = %v, want 3", got)
	}
}

func needSh(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on PATH")
	}
}

// TestProfileExec runs real shell scripts through ExecRunner: one that works
// (and reports the device it was given), one that hangs, one that fails, one
// that prints garbage. Only the first cell gets a rate; the others carry typed
// errors and are NaN in Values.
func TestProfileExec(t *testing.T) {
	needSh(t)
	sh := func(script string) []string { return []string{"sh", "-c", script} }
	ws := []gpu.Workload{
		{Name: "ok", Argv: sh(`echo "step 1"; echo "rate: 12.5"; echo "device: $CUDA_VISIBLE_DEVICES"`)},
		{Name: "device", Argv: sh(`echo "rate: ${CUDA_VISIBLE_DEVICES#GPU-}"`)},
		{Name: "hang", Argv: sh(`echo "rate: 1"; sleep 30`)},
		{Name: "fail", Argv: sh(`echo "rate: 1"; echo oops >&2; exit 3`)},
		{Name: "garbage", Argv: sh(`echo hello`)},
	}
	p := gpu.Profiler{Repeats: 2, Timeout: 300 * time.Millisecond}
	start := time.Now()
	prof, err := p.Profile(context.Background(), ws, []gpu.Target{{Type: "x", UUID: "GPU-7"}})
	if err != nil {
		t.Fatalf("Profile() error = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Profile() took %v: the hanging run was not stopped at its timeout", d)
	}
	want := [][]float64{{12.5}, {7}, {math.NaN()}, {math.NaN()}, {math.NaN()}}
	if diff := cmp.Diff(want, prof.Values(), cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("Values() mismatch (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		row  int
		want error
		text string
	}{
		{2, gpu.ErrTimeout, "timed out"},
		{3, gpu.ErrRun, "oops"},
		{4, gpu.ErrNoRate, "no line"},
	} {
		c := prof.Cells[tc.row][0]
		var re *gpu.RunError
		if !errors.As(c.Err, &re) || !errors.Is(c.Err, tc.want) {
			t.Errorf("%s: error = %v, want a *RunError wrapping %v", ws[tc.row].Name, c.Err, tc.want)
			continue
		}
		if re.Workload != ws[tc.row].Name || re.Type != "x" || re.UUID != "GPU-7" || re.Run != 0 {
			t.Errorf("%s: RunError = %+v, want it to name the workload, type, device and run 0", ws[tc.row].Name, re)
		}
		if !strings.Contains(c.Err.Error(), tc.text) {
			t.Errorf("%s: error %q does not mention %q", ws[tc.row].Name, c.Err, tc.text)
		}
		if len(c.Runs) != 0 {
			t.Errorf("%s: Runs = %v after a failed first run, want none", ws[tc.row].Name, c.Runs)
		}
	}
	if _, err := prof.Matrix(); !errors.Is(err, gpu.ErrTimeout) || !errors.Is(err, gpu.ErrNoRate) || !errors.Is(err, gpu.ErrRun) {
		t.Errorf("Matrix() error = %v, want every failed cell reported", err)
	}
}

func TestProfileLaterRunFails(t *testing.T) {
	f := &fakeRunner{script: map[string][]string{"a GPU-k": {"rate: 4", "nothing"}, "a GPU-v": {"rate: 1", "rate: 1", "rate: 1"}}}
	p := gpu.Profiler{Run: f.run}
	prof, err := p.Profile(context.Background(), []gpu.Workload{{Name: "w", Argv: []string{"a"}}}, twoTypes)
	if err != nil {
		t.Fatal(err)
	}
	var re *gpu.RunError
	if c := prof.Cells[0][0]; !errors.As(c.Err, &re) || re.Run != 1 || re.Output != "nothing" || c.Rate != 0 {
		t.Errorf("cell k80 = %+v, want run 1 failed with its output kept and no rate", c)
	}
	if c := prof.Cells[0][1]; c.Err != nil || c.Rate != 1 {
		t.Errorf("cell v100 = %+v, want rate 1: one failed cell must not stop the others", c)
	}
}

func TestProfileCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	run := func(context.Context, []string, []string) ([]byte, error) {
		calls++
		cancel()
		return []byte("rate: 1"), nil
	}
	prof, err := (&gpu.Profiler{Run: run}).Profile(ctx, []gpu.Workload{{Name: "w", Argv: []string{"a"}}}, twoTypes)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Profile() error = %v, want context.Canceled", err)
	}
	if calls != 1 {
		t.Errorf("%d runs after cancellation, want 1", calls)
	}
	for k, c := range prof.Cells[0] {
		if !errors.Is(c.Err, context.Canceled) {
			t.Errorf("cell %d error = %v, want context.Canceled", k, c.Err)
		}
	}
}

func TestProfileCustomParser(t *testing.T) {
	f := &fakeRunner{script: map[string][]string{"a GPU-k": {"42 it/s"}}}
	parse := func(out []byte) (float64, error) {
		var x float64
		_, err := fmt.Sscanf(string(out), "%g it/s", &x)
		return x, err
	}
	prof, err := (&gpu.Profiler{Repeats: 1, Run: f.run, Parse: parse}).Profile(context.Background(),
		[]gpu.Workload{{Name: "w", Argv: []string{"a"}}}, twoTypes[:1])
	if err != nil || prof.Cells[0][0].Rate != 42 {
		t.Fatalf("Profile() = %+v, %v; want rate 42", prof.Cells, err)
	}
	bad := func([]byte) (float64, error) { return math.Inf(1), nil }
	f = &fakeRunner{script: map[string][]string{"a GPU-k": {"x"}}}
	prof, _ = (&gpu.Profiler{Repeats: 1, Run: f.run, Parse: bad}).Profile(context.Background(),
		[]gpu.Workload{{Name: "w", Argv: []string{"a"}}}, twoTypes[:1])
	if !errors.Is(prof.Cells[0][0].Err, gpu.ErrNoRate) {
		t.Errorf("parser returning +Inf: error = %v, want ErrNoRate", prof.Cells[0][0].Err)
	}
}

func TestProfileInvalid(t *testing.T) {
	w := gpu.Workload{Name: "w", Argv: []string{"a"}}
	for _, tc := range []struct {
		name string
		ws   []gpu.Workload
		ts   []gpu.Target
	}{
		{"no workloads", nil, twoTypes},
		{"no targets", []gpu.Workload{w}, nil},
		{"unnamed workload", []gpu.Workload{{Argv: []string{"a"}}}, twoTypes},
		{"duplicate workload", []gpu.Workload{w, w}, twoTypes},
		{"no command", []gpu.Workload{{Name: "w"}}, twoTypes},
		{"duplicate type", []gpu.Workload{w}, []gpu.Target{twoTypes[0], twoTypes[0]}},
		{"no type", []gpu.Workload{w}, []gpu.Target{{UUID: "x"}}},
		{"no uuid", []gpu.Workload{w}, []gpu.Target{{Type: "k80"}}},
		{"two devices in one uuid", []gpu.Workload{w}, []gpu.Target{{Type: "k80", UUID: "GPU-a,GPU-b"}}},
		// Both were run, two types on one device, and
		// an entry the program never saw.
		{"one device for two types", []gpu.Workload{w}, []gpu.Target{{Type: "k80", UUID: "GPU-a"}, {Type: "v100", UUID: "GPU-a"}}},
		{"env entry without =", []gpu.Workload{{Name: "w", Argv: []string{"a"}, Env: []string{"NOEQUALS"}}}, twoTypes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(context.Context, []string, []string) ([]byte, error) {
				t.Fatal("ran a workload of an invalid request")
				return nil, nil
			}
			if _, err := (&gpu.Profiler{Run: run}).Profile(context.Background(), tc.ws, tc.ts); !errors.Is(err, gpu.ErrProfile) {
				t.Errorf("Profile() error = %v, want ErrProfile", err)
			}
		})
	}
}

// TestProfileInvalidInput: a UUID targeted twice and an Env entry without
// '=' are *gpufair.InputError values naming the target or workload.
func TestProfileInvalidInput(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ws        []gpu.Workload
		ts        []gpu.Target
		field, id string
		want      error
	}{
		{"one device for two types", []gpu.Workload{{Name: "w", Argv: []string{"a"}}}, []gpu.Target{{Type: "k80", UUID: "GPU-a"}, {Type: "v100", UUID: "GPU-a"}}, "Target.UUID", "v100", gpufair.ErrDuplicate},
		{"env entry without =", []gpu.Workload{{Name: "w", Argv: []string{"a"}, Env: []string{"X=1", "NOEQUALS"}}}, twoTypes, "Workload.Env", "w", gpufair.ErrValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := (*gpu.Profiler)(nil).Profile(context.Background(), tc.ws, tc.ts)
			var ie *gpufair.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field || ie.ID != tc.id || !errors.Is(err, tc.want) || !errors.Is(err, gpu.ErrProfile) {
				t.Errorf("Profile() error = %v, want a %s[%s] InputError wrapping %v and ErrProfile", err, tc.field, tc.id, tc.want)
			}
		})
	}
}

// TestParseRateOutOfRange: "rate: 1e309" was "not a number".
func TestParseRateOutOfRange(t *testing.T) {
	_, err := gpu.ParseRate([]byte("rate: 1e309\n"))
	if !errors.Is(err, gpu.ErrNoRate) || !strings.Contains(err.Error(), `"1e309" is out of float64's range`) {
		t.Errorf("ParseRate(1e309) error = %v, want ErrNoRate saying it is out of float64's range", err)
	}
}

// TestProfileDetachedChild: a workload that exits 0 after reporting its
// rate, leaving a process behind that holds its standard output, lost the
// rate to ErrRun ("exec: WaitDelay expired before I/O complete") or, with a
// Timeout below that delay, to ErrTimeout. Its rate is taken.
func TestProfileDetachedChild(t *testing.T) {
	needSh(t)
	ws := []gpu.Workload{{Name: "w", Argv: []string{"sh", "-c", `sleep 4 & echo "rate: 5"`}}}
	for _, timeout := range []time.Duration{time.Minute, time.Second} {
		prof, err := (&gpu.Profiler{Repeats: 1, Timeout: timeout}).Profile(context.Background(), ws, []gpu.Target{{Type: "x", UUID: "GPU-x"}})
		if err != nil {
			t.Fatalf("Profile() error = %v", err)
		}
		if c := prof.Cells[0][0]; c.Err != nil || c.Rate != 5 {
			t.Errorf("Timeout %v: cell = %+v, want rate 5", timeout, c)
		}
	}
}

func TestTargets(t *testing.T) {
	h := &gpu.Host{Devices: []gpu.Device{
		{Index: 0, UUID: "a", Type: "a100", MIG: gpu.MIG{Supported: true, Enabled: true}},
		{Index: 1, UUID: "b", Type: "t4"},
		{Index: 2, UUID: "c", Type: "a100"},
		{Index: 3, UUID: "d", Type: "t4"},
	}}
	want := []gpu.Target{{Type: "t4", UUID: "b"}, {Type: "a100", UUID: "c"}}
	if diff := cmp.Diff(want, gpu.Targets(h)); diff != "" {
		t.Errorf("Targets() mismatch (-want +got):\n%s", diff)
	}
	types, _ := h.Capacity()
	if diff := cmp.Diff([]topology.GPUType{"t4", "a100"}, types); diff != "" {
		t.Errorf("Capacity() types mismatch (-want +got):\n%s", diff)
	}
}

// TestProfileMedianOfLargeRuns: two runs of 1.7e308, each a finite rate,
// had a median (the mean of the two) of +Inf, which the cell took as its
// rate without an error, and Values passed on. It is 1.7e308.
func TestProfileMedianOfLargeRuns(t *testing.T) {
	f := &fakeRunner{script: map[string][]string{"a GPU-k": {"rate: 1.7e308", "rate: 1.7e308"}}}
	prof, err := (&gpu.Profiler{Repeats: 2, Run: f.run}).Profile(context.Background(), []gpu.Workload{{Name: "w", Argv: []string{"a"}}}, twoTypes[:1])
	if err != nil || prof.Err() != nil || prof.Cells[0][0].Rate != 1.7e308 {
		t.Errorf("runs of 1.7e308: %+v, %v; want a rate of 1.7e308", prof.Cells, err)
	}
}

// TestProfileNegativeSettings: a negative Repeats or Timeout is refused
// with ErrProfile; it ran 3 times with 10 minutes each, as if it were 0.
func TestProfileNegativeSettings(t *testing.T) {
	w := []gpu.Workload{{Name: "w", Argv: []string{"a"}}}
	run := func(context.Context, []string, []string) ([]byte, error) {
		t.Fatal("ran a workload of an invalid request")
		return nil, nil
	}
	for _, p := range []gpu.Profiler{{Repeats: -1}, {Timeout: -time.Second}} {
		if p.Repeats < 0 && p.RunsPerCell() != p.Repeats {
			t.Errorf("RunsPerCell() = %d for Repeats %d", p.RunsPerCell(), p.Repeats)
		}
		p.Run = run
		if _, err := p.Profile(context.Background(), w, twoTypes); !errors.Is(err, gpu.ErrProfile) {
			t.Errorf("Profiler{Repeats: %d, Timeout: %v}: error = %v, want ErrProfile", p.Repeats, p.Timeout, err)
		}
	}
}

// TestNilProfile: a nil *Profiler is the zero value (its Profile
// dereferenced nil), and a nil *Profile has no cells and is no matrix.
func TestNilProfile(t *testing.T) {
	var p *gpu.Profiler
	if n := p.RunsPerCell(); n != 3 {
		t.Errorf("RunsPerCell on nil = %d, want 3", n)
	}
	if _, err := p.Profile(context.Background(), nil, twoTypes); !errors.Is(err, gpu.ErrProfile) {
		t.Errorf("nil Profiler, no workloads: error = %v, want ErrProfile", err)
	}
	var prof *gpu.Profile
	if err := prof.Err(); err != nil {
		t.Errorf("Err on nil = %v", err)
	}
	if v := prof.Values(); v != nil {
		t.Errorf("Values on nil = %v", v)
	}
	if m, err := prof.Matrix(); m != nil || !errors.Is(err, gpufair.ErrShape) {
		t.Errorf("Matrix on nil = %v, %v; want an ErrShape error", m, err)
	}
}
