package topology

import (
	"errors"
	"math"
	"testing"
)

func rackCluster() Cluster {
	return Cluster{Servers: []Server{
		{Name: "a0", Rack: "a", Type: "v100", GPUs: 4},
		{Name: "a1", Rack: "a", Type: "v100", GPUs: 4},
		{Name: "b0", Rack: "b", Type: "v100", GPUs: 2},
		{Name: "lone", Type: "k80", GPUs: 2},
	}}
}

func TestLocalityOf(t *testing.T) {
	c := rackCluster()
	for _, tc := range []struct {
		name string
		gpus []GPU
		want Locality
		slow float64
	}{
		{"empty set is local", nil, SameServer, 1},
		{"one server", []GPU{{0, 0}, {0, 3}}, SameServer, 1},
		{"two servers of rack a", []GPU{{0, 0}, {1, 1}}, SameRack, 1.1},
		{"racks a and b", []GPU{{0, 0}, {2, 1}}, CrossRack, 1.3},
		{"a server without a rack is its own rack", []GPU{{3, 0}, {1, 0}}, CrossRack, 1.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.LocalityOf(tc.gpus)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("LocalityOf() = %v, want %v", got, tc.want)
			}
			counts, _ := c.Counts(tc.gpus)
			if s := DefaultSlowdown().OfCounts(c, counts); s != tc.slow {
				t.Errorf("OfCounts() = %v, want %v", s, tc.slow)
			}
		})
	}
}

func TestLocalityOfBadSlots(t *testing.T) {
	c := rackCluster()
	for _, gpus := range [][]GPU{{{4, 0}}, {{2, 2}}, {{-1, 0}}, {{0, 1}, {0, 1}}} {
		if _, err := c.LocalityOf(gpus); !errors.Is(err, ErrInvalid) {
			t.Errorf("LocalityOf(%v) error = %v, want ErrInvalid", gpus, err)
		}
	}
}

// RackOf keys servers by rack, a server without one by itself, and gives
// "" for a server out of range (it indexed past the servers and panicked).
func TestRackOf(t *testing.T) {
	c := rackCluster()
	for s, want := range map[int]string{0: "r:a", 1: "r:a", 2: "r:b", 3: "s:lone", -1: "", 4: ""} {
		if got := c.RackOf(s); got != want {
			t.Errorf("RackOf(%d) = %q, want %q", s, got, want)
		}
	}
}

func TestSlowdownValidate(t *testing.T) {
	if err := DefaultSlowdown().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Slowdown{{}, {1, 0.9, 1.3}, {1, 1.2, 1.1}, {1, 1, math.Inf(1)}} {
		if err := s.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%v.Validate() = %v, want ErrInvalid", s, err)
		}
	}
}
