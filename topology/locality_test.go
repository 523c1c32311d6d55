package topology

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpufair/gpufair"
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
			if s, err := DefaultSlowdown().OfCounts(c, counts); err != nil || s != tc.slow {
				t.Errorf("OfCounts() = %v, %v, want %v", s, err, tc.slow)
			}
		})
	}
}

// Counts of another cluster's length are refused, not read past the end.
func TestLocalityOfCountsShape(t *testing.T) {
	c := rackCluster()
	for _, counts := range [][]int{nil, make([]int, len(c.Servers)-1), make([]int, len(c.Servers)+1)} {
		if _, err := c.LocalityOfCounts(counts); !errors.Is(err, gpufair.ErrShape) {
			t.Errorf("LocalityOfCounts(%d counts for %d servers) = %v, want ErrShape", len(counts), len(c.Servers), err)
		}
		if _, err := DefaultSlowdown().OfCounts(c, counts); !errors.Is(err, gpufair.ErrShape) {
			t.Errorf("OfCounts(%d counts for %d servers) = %v, want ErrShape", len(counts), len(c.Servers), err)
		}
	}
}

// A slot outside the cluster or listed twice is reported with ErrSlot (and
// gpufair.ErrUnknownID or gpufair.ErrDuplicate), still wrapping ErrInvalid;
// the message said "invalid cluster" for a bad slot of a valid cluster.
func TestLocalityOfBadSlots(t *testing.T) {
	c := rackCluster()
	for _, tc := range []struct {
		gpus []GPU
		want error
	}{
		{[]GPU{{4, 0}}, gpufair.ErrUnknownID},
		{[]GPU{{2, 2}}, gpufair.ErrUnknownID},
		{[]GPU{{-1, 0}}, gpufair.ErrUnknownID},
		{[]GPU{{0, 1}, {0, 1}}, gpufair.ErrDuplicate},
	} {
		_, err := c.LocalityOf(tc.gpus)
		for _, want := range []error{ErrSlot, tc.want, ErrInvalid} {
			if !errors.Is(err, want) {
				t.Errorf("LocalityOf(%v) error = %v, want it to wrap %v", tc.gpus, err, want)
			}
		}
		if err != nil && strings.Contains(err.Error(), "invalid cluster") {
			t.Errorf("LocalityOf(%v) error = %q, want no mention of an invalid cluster", tc.gpus, err)
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

// Validate refuses bad slowdowns with ErrSlowdown and gpufair.ErrValue,
// still wrapping ErrInvalid; the message said "invalid cluster".
func TestSlowdownValidate(t *testing.T) {
	if err := DefaultSlowdown().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Slowdown{{}, {1, 0.9, 1.3}, {1, 1.2, 1.1}, {1, 1, math.Inf(1)}, {math.NaN(), 1, 1}} {
		err := s.Validate()
		for _, want := range []error{ErrSlowdown, gpufair.ErrValue, ErrInvalid} {
			if !errors.Is(err, want) {
				t.Errorf("%v.Validate() = %v, want it to wrap %v", s, err, want)
			}
		}
		if err != nil && (strings.Contains(err.Error(), "cluster") || !strings.Contains(err.Error(), "slowdown")) {
			t.Errorf("%v.Validate() = %q, want a message about the slowdown", s, err)
		}
	}
}
