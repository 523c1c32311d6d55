package data

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// JobType is one of Gavel's measured workloads: a model (with its batch
// size) trained on Scale GPUs at once (Gavel's scale factor).
type JobType struct {
	Model string
	Scale int
}

// String returns "Model ×Scale".
func (j JobType) String() string { return fmt.Sprintf("%s ×%d", j.Model, j.Scale) }

func compareJobTypes(a, b JobType) int {
	if c := cmp.Compare(a.Model, b.Model); c != 0 {
		return c
	}
	return cmp.Compare(a.Scale, b.Scale)
}

// Throughputs is a table of Gavel's measured training throughputs (steps per
// second of the whole job, at its scale factor) keyed by GPU and job type,
// with the co-located pairs of space sharing. GPU keys are Gavel's: "k80",
// "p100", "v100", and the same with "_unconsolidated" for workers spread
// over servers. A Throughputs is read-only once loaded.
type Throughputs struct {
	gpus     []string
	jobs     []JobType
	isolated map[string]map[JobType]float64
	pairs    map[string]map[[2]JobType][2]float64
}

// GPUs returns the GPU keys, sorted (none for a nil t).
func (t *Throughputs) GPUs() []string {
	if t == nil {
		return nil
	}
	return slices.Clone(t.gpus)
}

// JobTypes returns every job type measured on at least one GPU, sorted by
// model, then scale (none for a nil t).
func (t *Throughputs) JobTypes() []JobType {
	if t == nil {
		return nil
	}
	return slices.Clone(t.jobs)
}

// Isolated returns job type j's throughput alone on gpu. A measured 0 means
// the job does not fit; ok is false when the pair was not measured (by a
// nil t, nothing was).
func (t *Throughputs) Isolated(gpu string, j JobType) (rate float64, ok bool) {
	if t == nil {
		return 0, false
	}
	rate, ok = t.isolated[gpu][j]
	return rate, ok
}

// Pair returns the throughputs of job types a and b sharing one set of
// GPUs of type gpu: a's, then b's. ok is false when the pair was not
// measured (by a nil t, nothing was).
func (t *Throughputs) Pair(gpu string, a, b JobType) (rateA, rateB float64, ok bool) {
	if t == nil {
		return 0, 0, false
	}
	r, ok := t.pairs[gpu][[2]JobType{a, b}]
	return r[0], r[1], ok
}

// LoadThroughputs reads one of Gavel's throughput files from fsys (for
// example Gavel() and "simulation_throughputs.json"): a JSON object keyed by
// GPU, then by "('<model>', <scale>)", then by "null" for the isolated rate
// or by another job's key for a co-located [own, other] pair. Throughputs
// must not be negative. An error names the first fault in the keys'
// sorted order.
func LoadThroughputs(fsys fs.FS, name string) (*Throughputs, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	var raw map[string]map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("data: %s: %w", name, err)
	}
	t := &Throughputs{
		isolated: make(map[string]map[JobType]float64, len(raw)),
		pairs:    make(map[string]map[[2]JobType][2]float64, len(raw)),
	}
	seen := map[JobType]bool{}
	// In sorted order, so that a file with several faults is refused for
	// the same one every time.
	for _, gpu := range slices.Sorted(maps.Keys(raw)) {
		jobs := raw[gpu]
		t.gpus = append(t.gpus, gpu)
		iso := make(map[JobType]float64, len(jobs))
		pairs := map[[2]JobType][2]float64{}
		for _, key := range slices.Sorted(maps.Keys(jobs)) {
			cells := jobs[key]
			j, err := parseJobKey(key)
			if err != nil {
				return nil, fmt.Errorf("data: %s: %s: %w", name, gpu, err)
			}
			seen[j] = true
			for _, other := range slices.Sorted(maps.Keys(cells)) {
				v := cells[other]
				if other == "null" {
					var r float64
					if err := json.Unmarshal(v, &r); err != nil {
						return nil, fmt.Errorf("data: %s: %s %s: %w", name, gpu, key, err)
					}
					if r < 0 {
						return nil, fmt.Errorf("data: %s: %s %s: negative throughput %v", name, gpu, key, r)
					}
					iso[j] = r
					continue
				}
				o, err := parseJobKey(other)
				if err != nil {
					return nil, fmt.Errorf("data: %s: %s %s: %w", name, gpu, key, err)
				}
				var r [2]float64
				if err := json.Unmarshal(v, &r); err != nil {
					return nil, fmt.Errorf("data: %s: %s %s with %s: %w", name, gpu, key, other, err)
				}
				if r[0] < 0 || r[1] < 0 {
					return nil, fmt.Errorf("data: %s: %s %s with %s: negative throughputs %v", name, gpu, key, other, r)
				}
				pairs[[2]JobType{j, o}] = r
			}
		}
		t.isolated[gpu], t.pairs[gpu] = iso, pairs
	}
	for j := range seen {
		t.jobs = append(t.jobs, j)
	}
	slices.Sort(t.gpus)
	slices.SortFunc(t.jobs, compareJobTypes)
	return t, nil
}

// parseJobKey parses Gavel's "('<model>', <scale>)".
func parseJobKey(key string) (JobType, error) {
	s, ok := strings.CutPrefix(key, "('")
	if ok {
		s, ok = strings.CutSuffix(s, ")")
	}
	var model, scale string
	if ok {
		i := strings.LastIndex(s, "', ")
		ok = i >= 0
		if ok {
			model, scale = s[:i], s[i+3:]
		}
	}
	n, err := strconv.Atoi(scale)
	if !ok || err != nil || n < 1 || model == "" {
		return JobType{}, fmt.Errorf("job key %q is not ('<model>', <scale>)", key)
	}
	return JobType{Model: model, Scale: n}, nil
}
