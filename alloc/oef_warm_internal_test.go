package alloc

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/gpufair/gpufair/topology"
)

// TestWarmSeedNearRowsOnlyForUnnamedClasses: warmSeed starts from the warm
// rows and adds near-neighbour rows for the classes no warm row names and
// for orphans, and none where every class is named (an empty list of
// classes is not "all").
func TestWarmSeedNearRowsOnlyForUnnamedClasses(t *testing.T) {
	q := &oefLP{
		s:     [][]float64{{1, 2, 3}, {1, 2.1, 3}, {1, 4, 5}, {1, 4.2, 5.5}},
		w:     []float64{1, 1, 1, 1},
		count: []float64{1, 1, 1},
	}
	q.warm = []envyPair{{0, 1}, {1, 0}, {2, 3}}
	rows, err := q.warmSeed(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows, q.warm) {
		t.Errorf("every class named: seed %v, want the warm rows %v alone", rows, q.warm)
	}
	q.warm = []envyPair{{0, 1}, {1, 0}}
	rows, err = q.warmSeed(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	// Classes 2 and 3 are each other's nearest.
	want := []envyPair{{0, 1}, {1, 0}, {2, 3}, {3, 2}}
	if !slices.Equal(rows, want) {
		t.Errorf("classes 2 and 3 unnamed: seed %v, want %v", rows, want)
	}
	// An orphan gets its near rows though a warm row names it.
	q.warm, q.orphans = []envyPair{{0, 1}, {1, 0}, {2, 3}}, []int{3}
	rows, err = q.warmSeed(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []envyPair{{0, 1}, {1, 0}, {2, 3}, {3, 2}}; !slices.Equal(rows, want) {
		t.Errorf("class 3 an orphan: seed %v, want %v", rows, want)
	}
}

// TestWarmPairsReroutesDepartedJobs: rows that name a departed job are
// rerouted to the classes that job shared rows with, whose classes are
// orphans; rows between present jobs map as they are; rows within one
// class and between departed jobs are dropped.
func TestWarmPairsReroutesDepartedJobs(t *testing.T) {
	p, in, cls := warmTestInstance(t)
	rows := []OEFEnvyRow{
		{"a", "gone"}, {"gone", "b"}, {"c", "gone"}, // rerouted
		{"b", "c"},                    // kept
		{"a", "a2"}, {"gone", "left"}, // dropped
	}
	got, orphans := in.warmPairs(p, cls, rows)
	a, b, cc := cls.of[0], cls.of[1], cls.of[2]
	want := []envyPair{{a, b}, {a, cc}, {cc, b}, {cc, a}, {b, cc}}
	if !slices.Equal(got, want) {
		t.Errorf("warmPairs() = %v, want %v", got, want)
	}
	if want := []int{a, b, cc}; !slices.Equal(orphans, want) {
		t.Errorf("warmPairs() orphans = %v, want %v", orphans, want)
	}
}

// TestClassBasisFor: a basis named by jobs maps to classes and GPU types
// by name, leaving out shares, rows and types that name what the problem
// no longer has, and rows within one class; named back by jobs, it is the
// basis given less those.
func TestClassBasisFor(t *testing.T) {
	p, in, cls := warmTestInstance(t)
	b := OEFBasis{
		Shares: []OEFShare{{"a", "C"}, {"gone", "A"}, {"b", "B"}, {"c", "Z"}, {"a2", "C"}},
		Tight:  []OEFEnvyRow{{"a", "b"}, {"b", "gone"}, {"a", "a2"}, {"c", "a2"}},
		Full:   []topology.GPUType{"B", "Z", "C"},
	}
	cb, departed := in.classBasisFor(p, cls, b)
	if !departed {
		t.Error("a basis naming a departed job: departed false")
	}
	a, bb, cc := cls.of[0], cls.of[1], cls.of[2]
	if want := [][2]int{{a, 2}, {bb, 1}, {a, 2}}; !slices.Equal(cb.cols, want) {
		t.Errorf("columns %v, want %v", cb.cols, want)
	}
	if want := []envyPair{{a, bb}, {cc, a}}; !slices.Equal(cb.rows, want) {
		t.Errorf("rows %v, want %v", cb.rows, want)
	}
	if want := []int{1, 2}; !slices.Equal(cb.types, want) {
		t.Errorf("types %v, want %v", cb.types, want)
	}
	back := in.jobBasis(p, cls, cb)
	want := OEFBasis{
		Shares: []OEFShare{{"a", "C"}, {"b", "B"}, {"a", "C"}},
		Tight:  []OEFEnvyRow{{"a", "b"}, {"c", "a"}},
		Full:   []topology.GPUType{"B", "C"},
	}
	if !slices.Equal(back.Shares, want.Shares) || !slices.Equal(back.Tight, want.Tight) || !slices.Equal(back.Full, want.Full) {
		t.Errorf("named back: %+v, want %+v", back, want)
	}
	// Without caps it records the speedups of every job it names.
	if !slices.Equal(back.Types, p.Capacity.Types) || len(back.Speedups) != 3 ||
		!slices.Equal(back.Speedups["a"], in.speed[0]) || !slices.Equal(back.Speedups["c"], in.speed[2]) || len(back.Ghosts) != 0 {
		t.Errorf("named back: types %v, speedups %v, ghosts %v", back.Types, back.Speedups, back.Ghosts)
	}
	if cb, _ := in.classBasisFor(p, cls, OEFBasis{}); cb != nil {
		t.Error("an empty basis gave a hint")
	}
	if _, departed := in.classBasisFor(p, cls, back); departed {
		t.Error("a basis naming present jobs only: departed true")
	}
}

// warmTestInstance returns a problem of four jobs, a, b, c and a2, over
// GPU types A, B and C, with its OEF instance and classes, in which a and
// a2 share a class.
func warmTestInstance(t *testing.T) (*Problem, *oefInstance, rowClasses) {
	t.Helper()
	c, err := NewCapacity([]topology.GPUType{"A", "B", "C"}, []float64{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	users := []Tenant{{ID: "u", Weight: 1}, {ID: "v", Weight: 1}}
	jobs := []Job{
		{ID: "a", Owner: "u", Gang: 1, Weight: 1, Rates: []float64{1, 2, 3}},
		{ID: "b", Owner: "v", Gang: 1, Weight: 1, Rates: []float64{1, 3, 4}},
		{ID: "c", Owner: "v", Gang: 1, Weight: 1, Rates: []float64{1, 5, 6}},
		{ID: "a2", Owner: "u", Gang: 1, Weight: 1, Rates: []float64{1, 2, 3}},
	}
	p, err := NewJobProblem(c, users, jobs)
	if err != nil {
		t.Fatal(err)
	}
	in, err := newOEFInstance(p, OEF{Mode: Cooperative})
	if err != nil {
		t.Fatal(err)
	}
	return p, in, groupRows(len(in.speed), in.classKey)
}

// TestOEFBasisClone: a clone equals its basis, and changing the clone,
// down to a speedup, leaves the basis as it was.
func TestOEFBasisClone(t *testing.T) {
	b := OEFBasis{
		Shares:   []OEFShare{{"a", "A"}},
		Tight:    []OEFEnvyRow{{"a", "gone"}},
		Full:     []topology.GPUType{"A"},
		Types:    []topology.GPUType{"A", "B"},
		Speedups: map[JobID][]float64{"a": {1, 2}, "gone": {1, 3}},
		Ghosts:   []JobID{"gone"},
	}
	c := b.Clone()
	if !reflect.DeepEqual(b, c) {
		t.Fatalf("Clone() = %+v, want %+v", c, b)
	}
	c.Shares[0].Job, c.Tight[0].Envied, c.Full[0], c.Types[0], c.Ghosts[0] = "x", "x", "x", "x", "x"
	c.Speedups["a"][1] = 9
	c.Speedups["new"] = nil
	if b.Shares[0].Job != "a" || b.Tight[0].Envied != "gone" || b.Full[0] != "A" || b.Types[0] != "A" ||
		b.Ghosts[0] != "gone" || b.Speedups["a"][1] != 2 || len(b.Speedups) != 2 {
		t.Errorf("changing the clone changed the basis: %+v", b)
	}
}
