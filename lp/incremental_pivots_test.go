package lp

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"
)

// warmPivotsCase is a row-generation sequence recorded from cooperative
// OEF over pooled bundles (testdata/warm_small_pivots.json.gz): 12 pools ×
// 4 GPU types, maximise Σ obj·z subject to Σ_g weight_g·z_gk ≤ capacity_k,
// then rounds of envy rows, each triple (c, g, h) the row
// speed_c·z_g − speed_c·z_h ≥ 0.
type warmPivotsCase struct {
	pooledBundles
	Rounds [][][3]int `json:"rounds"`
}

// TestIncrementalDualSkipsSmallPivotRows replays that sequence with warm
// pure-Go re-solves. In the last round (3,479 violated rows added to
// 3,755) the dual phase met a row whose ratio test offered only pivots
// below spxPivotTol after 22 iterations and gave the whole re-solve to the
// primal simplex, whose phase 1 ran over 40,000 iterations without ending
// (a cold solve takes 179); passing that row over until the next
// refactorisation ends the re-solve in 24. Each warm solve must end within
// 1,000 iterations, at the cold solve's optimum.
func TestIncrementalDualSkipsSmallPivotRows(t *testing.T) {
	var tc warmPivotsCase
	readGzipJSON(t, "testdata/warm_small_pivots.json.gz", &tc)
	m, z := tc.model()
	set := &Settings{Backend: PureGo, MaxIterations: 1000}
	in, err := NewIncremental(m, set)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx := context.Background()
	if _, err := in.Solve(ctx); err != nil {
		t.Fatal(err)
	}
	for round, rows := range tc.Rounds {
		for _, r := range rows {
			terms := envyTerms(z, tc.Speed[r[0]], r[1], r[2])
			in.AddConstraint("envy", terms, GE, 0)
			m.AddConstraint("envy", terms, GE, 0)
		}
		warm, err := in.Solve(ctx)
		if err != nil {
			t.Fatalf("round %d (%d rows added): warm re-solve: %v", round, len(rows), err)
		}
		cold, err := Solve(ctx, m, &Settings{Backend: PureGo})
		if err != nil {
			t.Fatalf("round %d: cold solve: %v", round, err)
		}
		if math.Abs(warm.Objective-cold.Objective) > 1e-9*math.Abs(cold.Objective) {
			t.Fatalf("round %d: warm objective %.12g, cold %.12g", round, warm.Objective, cold.Objective)
		}
	}
}

// readGzipJSON decodes the gzipped JSON file at path into v.
func readGzipJSON(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(zr).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// pooledBundles is the part of a recorded pooled-bundle LP before its envy
// rows: pools × GPU types (len(Weight) × len(Capacity)), obj row-major, and
// the speedups of the classes whose envy rows follow.
type pooledBundles struct {
	Obj      []float64   `json:"obj"`
	Weight   []float64   `json:"weight"`
	Capacity []float64   `json:"capacity"`
	Speed    [][]float64 `json:"speed"`
}

// model returns the LP of cooperative OEF over the pooled bundles before
// its envy rows: maximise Σ obj·z subject to Σ_g weight_g·z_gk ≤
// capacity_k.
func (b pooledBundles) model() (*Model, Grid) {
	pools, types := len(b.Weight), len(b.Capacity)
	m := NewModel(Maximize)
	z := m.AddGrid("z", pools, types, 0, Inf)
	for k, n := range b.Capacity {
		m.AddConstraint("capacity", z.ColTerms(k, b.Weight), LE, n)
	}
	for g := range pools {
		for k := range types {
			m.SetObjective(z.At(g, k), b.Obj[g*types+k])
		}
	}
	return m, z
}

// envyTerms returns the terms of the envy row speed·z_g − speed·z_h.
func envyTerms(z Grid, speed []float64, g, h int) []Term {
	neg := make([]float64, len(speed))
	for i, x := range speed {
		neg[i] = -x
	}
	return append(z.RowTerms(g, speed), z.RowTerms(h, neg)...)
}
