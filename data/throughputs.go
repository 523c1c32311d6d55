package data

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufair/gpufair"
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
// or by another job's key for a co-located [own, other] pair.
//
// It returns an *gpufair.InputError whose Field is "fsys", wrapping
// gpufair.ErrEmpty, for a nil fsys, fsys's error if the file cannot be read,
// a *json.SyntaxError if it is not JSON, and otherwise, for a file that is
// not such a table, a *gpufair.InputError whose Field is "Throughputs" (no GPUs), "Throughputs.GPU"
// (an empty GPU key or one without job types), "Throughputs.JobType" (a key
// that is not ('<model>', <scale>), or one without throughputs),
// "Throughputs.Isolated" (a rate that is not a number or is negative) or
// "Throughputs.Pair" (a pair that is not two such rates, or whose other key
// is not a job key). It wraps gpufair.ErrEmpty, ErrValue or ErrShape, or
// ErrDuplicate for a key listed twice in one object, or two keys of the same
// job type ("('A', 1)" and "('A', 01)"): encoding/json would keep one of them
// without a word. An error names the first fault in the keys' sorted order.
func LoadThroughputs(fsys fs.FS, name string) (*Throughputs, error) {
	t, err := loadThroughputs(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", name, err)
	}
	return t, nil
}

func loadThroughputs(fsys fs.FS, name string) (*Throughputs, error) {
	if err := checkFS(fsys); err != nil {
		return nil, err
	}
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	if !json.Valid(b) {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err // a *json.SyntaxError saying where
		}
		return nil, errors.New("not valid JSON")
	}
	raw, err := members(b, "Throughputs", "")
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, gpufair.Invalid("Throughputs", "", gpufair.ErrEmpty, "no GPUs")
	}
	t := &Throughputs{
		isolated: make(map[string]map[JobType]float64, len(raw)),
		pairs:    make(map[string]map[[2]JobType][2]float64, len(raw)),
	}
	seen := map[JobType]bool{}
	// In sorted order, so that a file with several faults is refused for
	// the same one every time.
	for _, gpu := range slices.Sorted(maps.Keys(raw)) {
		if gpu == "" {
			return nil, gpufair.Invalid("Throughputs.GPU", "", gpufair.ErrEmpty, "empty GPU key")
		}
		jobs, err := members(raw[gpu], "Throughputs.GPU", gpu)
		if err != nil {
			return nil, err
		}
		if len(jobs) == 0 {
			return nil, gpufair.Invalid("Throughputs.GPU", gpu, gpufair.ErrEmpty, "no job types")
		}
		t.gpus = append(t.gpus, gpu)
		iso := make(map[JobType]float64, len(jobs))
		pairs := map[[2]JobType][2]float64{}
		keyOf := make(map[JobType]string, len(jobs))
		for _, key := range slices.Sorted(maps.Keys(jobs)) {
			id := gpu + " " + key
			j, err := parseJobKey(key)
			if err != nil {
				return nil, gpufair.Invalid("Throughputs.JobType", id, gpufair.ErrValue, "%v", err)
			}
			if k, dup := keyOf[j]; dup {
				return nil, gpufair.Invalid("Throughputs.JobType", id, gpufair.ErrDuplicate, "%v is also keyed %s", j, k)
			}
			keyOf[j] = key
			cells, err := members(jobs[key], "Throughputs.JobType", id)
			if err != nil {
				return nil, err
			}
			if len(cells) == 0 {
				return nil, gpufair.Invalid("Throughputs.JobType", id, gpufair.ErrEmpty, "no throughputs")
			}
			seen[j] = true
			otherKey := map[JobType]string{}
			for _, other := range slices.Sorted(maps.Keys(cells)) {
				v := cells[other]
				if other == "null" {
					r, err := rate(v)
					if err != nil {
						return nil, gpufair.Invalid("Throughputs.Isolated", id, gpufair.ErrValue, "%v", err)
					}
					if r < 0 {
						return nil, gpufair.Invalid("Throughputs.Isolated", id, gpufair.ErrValue, "negative throughput %v", r)
					}
					iso[j] = r
					continue
				}
				pid := id + " with " + other
				o, err := parseJobKey(other)
				if err != nil {
					return nil, gpufair.Invalid("Throughputs.Pair", pid, gpufair.ErrValue, "%v", err)
				}
				if k, dup := otherKey[o]; dup {
					return nil, gpufair.Invalid("Throughputs.Pair", pid, gpufair.ErrDuplicate, "%v is also keyed %s", o, k)
				}
				otherKey[o] = other
				r, err := pair(v)
				if err != nil {
					return nil, gpufair.Invalid("Throughputs.Pair", pid, gpufair.ErrValue, "%v", err)
				}
				if len(r) != 2 {
					return nil, gpufair.Invalid("Throughputs.Pair", pid, gpufair.ErrShape, "%d throughputs, not [own, other]", len(r))
				}
				if r[0] < 0 || r[1] < 0 {
					return nil, gpufair.Invalid("Throughputs.Pair", pid, gpufair.ErrValue, "negative throughputs %v", r)
				}
				pairs[[2]JobType{j, o}] = [2]float64(r)
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

// members returns the members of the JSON object b (none for null), which
// must be valid JSON. An object that holds a key twice, or a value that is
// not an object, is an error about field and id. encoding/json's maps keep
// the last of a repeated key without a word.
func members(b []byte, field, id string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, gpufair.Invalid(field, id, gpufair.ErrValue, "%v", err)
	}
	if tok == nil {
		return nil, nil
	}
	if tok != json.Delim('{') {
		return nil, gpufair.Invalid(field, id, gpufair.ErrValue, "%v is not a JSON object", tok)
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, gpufair.Invalid(field, id, gpufair.ErrValue, "%v", err)
		}
		key, _ := tok.(string) // an object's keys are strings, in valid JSON
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, gpufair.Invalid(field, id, gpufair.ErrValue, "%v", err)
		}
		if _, dup := m[key]; dup {
			return nil, gpufair.Invalid(field, id, gpufair.ErrDuplicate, "key %q listed twice", key)
		}
		m[key] = v
	}
	return m, nil
}

// rate reads b as one throughput, a JSON number; encoding/json would read
// null as 0.
func rate(b []byte) (float64, error) {
	var p *float64
	if err := json.Unmarshal(b, &p); err != nil {
		return 0, errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	if p == nil {
		return 0, errors.New("the throughput is null")
	}
	return *p, nil
}

// pair reads b as a JSON array of throughputs, of any length for the caller
// to check; encoding/json would read a null in it as 0, and into a [2]float64
// read a missing number as 0 and drop an extra one.
func pair(b []byte) ([]float64, error) {
	var ps []*float64
	if err := json.Unmarshal(b, &ps); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	out := make([]float64, len(ps))
	for i, p := range ps {
		if p == nil {
			return nil, fmt.Errorf("%s: a throughput is null", b)
		}
		out[i] = *p
	}
	return out, nil
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
