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
