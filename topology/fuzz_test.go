package topology

import (
	"fmt"
	"testing"

	"github.com/gpufair/gpufair/internal/fuzzdata"
)

// FuzzPlacer builds clusters of arbitrary server sizes (2^40 GPUs once
// exhausted memory) and places, releases and reserves gangs on them. It
// must never panic; a placement holds exactly the GPUs asked for, on
// servers of the type asked for, none of them held twice.
func FuzzPlacer(f *testing.F) {
	f.Add([]byte{2, 4, 0, 8, 1, 3, 1, 2, 0, 5})
	f.Add([]byte{1, 255, 255, 255, 255, 255, 255, 255, 127, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		var c Cluster
		for i := range 1 + r.Int(4) {
			gpus := r.Int(9)
			if r.Int(8) == 0 {
				gpus = int(int64(r.Raw()))
			}
			c.Servers = append(c.Servers, Server{Name: fmt.Sprint("s", i), Type: GPUType(fmt.Sprint("t", r.Int(2))), GPUs: gpus})
		}
		p, err := NewPlacer(c)
		if err != nil {
			return
		}
		held := map[GPU]bool{}
		for range r.Int(8) {
			typ, n := GPUType(fmt.Sprint("t", r.Int(3))), r.Int(10)-1
			gpus, err := p.Place(typ, n)
			if err != nil {
				continue
			}
			if len(gpus) != n {
				t.Fatalf("Place(%q, %d) gave %d GPUs", typ, n, len(gpus))
			}
			for _, g := range gpus {
				if !c.Has(g) || c.Servers[g.Server].Type != typ || held[g] {
					t.Fatalf("Place(%q, %d) gave %v: not a free slot of that type", typ, n, g)
				}
				held[g] = true
			}
			if r.Int(2) == 0 {
				if err := p.Release(gpus); err != nil {
					t.Fatalf("Release(%v): %v", gpus, err)
				}
				for _, g := range gpus {
					delete(held, g)
				}
			}
		}
	})
}
