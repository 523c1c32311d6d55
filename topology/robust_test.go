package topology

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gpufair/gpufair"
)

// TestNewPlacerHugeServer: a server of 2^40 GPUs passed Validate and
// NewPlacer ran out of memory allocating its slots.
func TestNewPlacerHugeServer(t *testing.T) {
	var many Cluster
	for i := range MaxClusterGPUs/MaxServerGPUs + 1 {
		many.Servers = append(many.Servers, Server{Name: fmt.Sprint(i), Type: "v100", GPUs: MaxServerGPUs})
	}
	for _, c := range []Cluster{{Servers: []Server{{Name: "big", Type: "v100", GPUs: 1 << 40}}}, many} {
		if err := c.Validate(); !errors.Is(err, gpufair.ErrTooLarge) || !errors.Is(err, ErrInvalid) {
			t.Errorf("Validate() = %v, want ErrInvalid and ErrTooLarge", err)
		}
		if _, err := NewPlacer(c); !errors.Is(err, gpufair.ErrTooLarge) {
			t.Errorf("NewPlacer() error = %v, want ErrTooLarge", err)
		}
	}
}

// TestCapacityAndSlotsOfInvalidCluster: Capacity and AllGPUs trusted the
// cluster: a server of 2^40 GPUs made AllGPUs exhaust memory, and two of
// 2^62 made Capacity's count wrap negative. A cluster Validate refuses has
// neither; a valid one has both.
func TestCapacityAndSlotsOfInvalidCluster(t *testing.T) {
	for _, c := range []Cluster{
		{Servers: []Server{{Name: "big", Type: "v100", GPUs: 1 << 40}}},
		{Servers: []Server{{Name: "a", Type: "v100", GPUs: 1 << 62}, {Name: "b", Type: "v100", GPUs: 1 << 62}}},
		{Servers: []Server{{Name: "a", Type: "v100", GPUs: 0}}},
		{},
	} {
		if types, count := c.Capacity(); types != nil || count != nil {
			t.Errorf("Capacity() of %+v = %v, %v; want nil", c, types, count)
		}
		if gpus := c.AllGPUs(); gpus != nil {
			t.Errorf("AllGPUs() of %+v has %d slots; want nil", c, len(gpus))
		}
	}
	c := Cluster{Servers: []Server{{Name: "a", Type: "k80", GPUs: 2}, {Name: "b", Type: "v100", GPUs: 1}, {Name: "c", Type: "k80", GPUs: 1}}}
	if types, count := c.Capacity(); fmt.Sprint(types, count) != "[k80 v100] [3 1]" {
		t.Errorf("Capacity() = %v, %v; want [k80 v100] [3 1]", types, count)
	}
	if gpus := c.AllGPUs(); fmt.Sprint(gpus) != "[{0 0} {0 1} {1 0} {2 0}]" {
		t.Errorf("AllGPUs() = %v", gpus)
	}
}
