package auction

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/fuzzdata"
	"github.com/gpufair/gpufair/topology"
)

// FuzzProportionalFair solves the partial-allocation market on arbitrary
// capacities and linear valuations. It must never panic; an allocation it
// returns is within capacity, with finite utilities.
func FuzzProportionalFair(f *testing.F) {
	f.Add([]byte{2, 2, 16, 32, 16, 48, 32, 16})
	f.Add(append([]byte{1, 1, 0}, fuzzdata.Bytes(1e308, 1e-300)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		nt, nb := 1+r.Int(3), 1+r.Int(4)
		c := alloc.Capacity{Count: r.Floats(nt)}
		for k := range nt {
			c.Types = append(c.Types, topology.GPUType(fmt.Sprint("t", k)))
		}
		bidders := make([]string, nb)
		vals := make([]alloc.Valuation, nb)
		for i := range bidders {
			bidders[i] = fmt.Sprint("b", i)
			vals[i] = alloc.Linear(r.Floats(nt))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := ProportionalFair(ctx, c, bidders, vals, nil)
		if err != nil {
			return
		}
		if err := res.Alloc.Validate(c); err != nil {
			t.Fatalf("allocation outside capacity: %v", err)
		}
		for i, u := range res.Utilities {
			if math.IsNaN(u) || math.IsInf(u, 0) {
				t.Fatalf("bidder %d has utility %v", i, u)
			}
		}
	})
}
