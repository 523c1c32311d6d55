package topology_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

func placementCluster(gpus ...int) topology.Cluster {
	var c topology.Cluster
	for i, g := range gpus {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("s%d", i), Type: "v100", GPUs: g})
	}
	return c
}

func TestPlaceFewestServers(t *testing.T) {
	p, err := topology.NewPlacer(placementCluster(4, 2, 8))
	if err != nil {
		t.Fatal(err)
	}
	// A 2-GPU gang fits one server: the fullest that fits (s1, 2 GPUs).
	got, _ := p.Place("v100", 2)
	if diff := cmp.Diff([]topology.GPU{{Server: 1, Slot: 0}, {Server: 1, Slot: 1}}, got); diff != "" {
		t.Errorf("2-GPU gang (-want +got):\n%s", diff)
	}
	// 10 GPUs: s2's 8 and 2 of s0's 4, two servers.
	got, _ = p.Place("v100", 10)
	if n := topology.ServersUsed(got); n != 2 || len(got) != 10 {
		t.Errorf("10-GPU gang on %d servers, %d GPUs", n, len(got))
	}
	if free := []int{p.FreeOn(0), p.FreeOn(1), p.FreeOn(2)}; !slices.Equal(free, []int{2, 0, 0}) {
		t.Errorf("free GPUs per server %v, want [2 0 0]", free)
	}
	if diff := cmp.Diff(placementCluster(4, 2, 8), p.Cluster()); diff != "" {
		t.Errorf("Cluster() (-want +got):\n%s", diff)
	}
	if _, err := p.Place("v100", 3); !errors.Is(err, topology.ErrNoCapacity) {
		t.Errorf("over capacity: %v", err)
	}
	if _, err := p.Place("v100", 0); !errors.Is(err, topology.ErrGang) {
		t.Errorf("Place of 0 GPUs: %v", err)
	}
	if _, err := p.Place("k80", 1); !errors.Is(err, gpufair.ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	if err := p.Reserve([]topology.GPU{{Server: 1, Slot: 0}}); !errors.Is(err, topology.ErrSlot) {
		t.Errorf("reserving a taken slot: %v", err)
	}
	if err := p.Release([]topology.GPU{{Server: 9, Slot: 0}}); !errors.Is(err, topology.ErrSlot) {
		t.Errorf("releasing a missing slot: %v", err)
	}
	p.Reset()
	if p.Free("v100") != 14 {
		t.Errorf("free after reset %d", p.Free("v100"))
	}
	// A free slot listed twice was reported as taken.
	twice := []topology.GPU{{Server: 2, Slot: 0}, {Server: 2, Slot: 0}}
	if err := p.Reserve(twice); !errors.Is(err, topology.ErrSlot) || !errors.Is(err, gpufair.ErrDuplicate) || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("Reserve(%v) of a free slot = %v, want ErrSlot and ErrDuplicate, listed twice", twice, err)
	}
	if n := p.FreeOn(2); n != 8 {
		t.Errorf("a refused Reserve took slots: %d free on server 2, want 8", n)
	}
}

// Gangs placed on an empty cluster use the fewest servers possible, and no
// slot is handed out twice.
func TestPlaceProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gpus := rapid.SliceOfN(rapid.IntRange(1, 8), 1, 8).Draw(t, "servers")
		c := placementCluster(gpus...)
		p, _ := topology.NewPlacer(c)
		total := p.Free("v100")
		n := rapid.IntRange(1, total).Draw(t, "first")
		got, err := p.Place("v100", n)
		if err != nil {
			t.Fatal(err)
		}
		if want := topology.MinServers(c, "v100", n); topology.ServersUsed(got) != want {
			t.Fatalf("%d GPUs on %d servers, fewest is %d", n, topology.ServersUsed(got), want)
		}
		seen := map[topology.GPU]bool{}
		for _, g := range got {
			seen[g] = true
		}
		for p.Free("v100") > 0 {
			m := rapid.IntRange(1, p.Free("v100")).Draw(t, "next")
			more, err := p.Place("v100", m)
			if err != nil || len(more) != m {
				t.Fatalf("Place(%d) = %d GPUs, %v", m, len(more), err)
			}
			for _, g := range more {
				if seen[g] || g.Slot >= c.Servers[g.Server].GPUs {
					t.Fatalf("slot %v reused or missing", g)
				}
				seen[g] = true
			}
		}
		if len(seen) != total {
			t.Fatalf("%d slots handed out of %d", len(seen), total)
		}
	})
}

// MinServers said 1 server for a gang of 0 or fewer GPUs, and a running sum
// of server sizes could wrap for a cluster that was never validated.
func TestMinServersEdges(t *testing.T) {
	c := placementCluster(4, 2, 8)
	for _, tc := range []struct{ n, want int }{{-1, 0}, {0, 0}, {1, 1}, {9, 2}, {14, 3}, {15, 0}} {
		if got := topology.MinServers(c, "v100", tc.n); got != tc.want {
			t.Errorf("MinServers(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
	half := math.MaxInt/2 + 1
	big := topology.Cluster{Servers: []topology.Server{{Name: "a", Type: "v100", GPUs: half}, {Name: "b", Type: "v100", GPUs: half}}}
	if got := topology.MinServers(big, "v100", math.MaxInt); got != 2 {
		t.Errorf("MinServers(MaxInt) on two servers of MaxInt/2+1 GPUs = %d, want 2", got)
	}
}
